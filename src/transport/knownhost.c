/* SPDX-License-Identifier: ISC */
/* known_hosts under a HostKeyAlias (knownhost.h).
 *
 * libssh 0.10 looks a server up by the address it connected to
 * ("[192.168.1.57]:8022") and has no HostKeyAlias. A phone on Wi-Fi gets
 * a new address now and then, and ssh's answer is `HostKeyAlias phone`:
 * its key is recorded under that name, whatever the address. Without this
 * phsync refused (or asked about) a phone that ssh itself accepted.
 *
 * The files are libssh's (UserKnownHostsFile, GlobalKnownHostsFile as it
 * read them from the config) and each line is parsed by libssh's own
 * ssh_known_hosts_parse_line, which matches the name against plain,
 * wildcard and hashed (HashKnownHosts) host fields; only the name looked
 * up is ours. As in ssh, the alias is looked up as it is, without the port.
 * Lines libssh skips are skipped here too: comments, @cert-authority,
 * lines it cannot parse.
 *
 * @revoked lines, which libssh skips, are read here for every run, alias
 * or not (ph_knownhost_revoked): as in ssh, a key a line marks revoked for
 * a name the server goes by is never accepted, whatever other lines say
 * and whatever StrictHostKeyChecking is. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "knownhost.h"

#define LINE_MAX_BYTES 8192

#define REVOKED "@revoked"

/* Reads the file's lines for name: into *st the plain ones (which only
 * gets worse: NOT_FOUND, then OTHER or CHANGED; OK ends that search), or
 * with st NULL the @revoked ones, *revoked set when one holds key. 0, or
 * -1 when the file exists but cannot be read. */
static int
check_file(const char *file, const char *name, ssh_key key, enum ssh_known_hosts_e *st,
           int *revoked)
{
	char line[LINE_MAX_BYTES];
	FILE *f;
	int rc = 0;

	if (file == NULL || (f = fopen(file, "r")) == NULL)
		return file != NULL && errno != ENOENT && errno != ENOTDIR ? -1 : 0;
	while ((st == NULL ? !*revoked : *st != SSH_KNOWN_HOSTS_OK) &&
	       fgets(line, sizeof(line), f) != NULL) {
		struct ssh_knownhosts_entry *e = NULL;
		size_t len = strcspn(line, "\r\n");
		char *p = line;

		if (line[len] == '\0' && !feof(f)) {
			int c;

			/* Longer than libssh reads: not a line for anyone. */
			while ((c = fgetc(f)) != EOF && c != '\n')
				;
			continue;
		}
		line[len] = '\0';
		while (*p == ' ' || *p == '\t')
			p++;
		if (st == NULL) {
			/* "@revoked", a space, then a line as any other (ssh ends
			 * a marker at the line's first space: after a tab it reads
			 * no marker, and no line). */
			if (strncmp(p, REVOKED " ", strlen(REVOKED) + 1) != 0)
				continue;
			for (p += strlen(REVOKED); *p == ' ' || *p == '\t'; p++)
				;
			if (ssh_known_hosts_parse_line(name, p, &e) == SSH_OK && e != NULL &&
			    ssh_key_cmp(e->publickey, key, SSH_KEY_CMP_PUBLIC) == 0)
				*revoked = 1;
			ssh_knownhosts_entry_free(e);
			continue;
		}
		if (*p == '\0' || *p == '#' || *p == '@')
			continue;
		if (ssh_known_hosts_parse_line(name, p, &e) != SSH_OK || e == NULL)
			continue;
		if (ssh_key_cmp(e->publickey, key, SSH_KEY_CMP_PUBLIC) == 0)
			*st = SSH_KNOWN_HOSTS_OK;
		else if (ssh_key_type(e->publickey) == ssh_key_type(key))
			*st = SSH_KNOWN_HOSTS_CHANGED;
		else if (*st != SSH_KNOWN_HOSTS_CHANGED)
			*st = SSH_KNOWN_HOSTS_OTHER;
		ssh_knownhosts_entry_free(e);
	}
	if (ferror(f))
		rc = -1;
	fclose(f);
	return rc;
}

int
ph_knownhost_name_ok(const char *name)
{
	const unsigned char *p = (const unsigned char *)name;

	if (*p == '\0' || *p == '#' || *p == '@' || *p == '|' || *p == '!')
		return 0;
	for (; *p != '\0'; p++)
		if (*p <= ' ' || *p == 0x7f || *p == ',' || *p == '*' || *p == '?')
			return 0;
	return 1;
}

/* check_file over the files libssh reads, the user's then the global one
 * (st and revoked as there): 0, or -1 without the server's key or when a
 * file that exists could not be read. */
static int
check_files(ssh_session sess, const char *name, enum ssh_known_hosts_e *st, int *revoked)
{
	char *user = NULL, *global = NULL;
	ssh_key key = NULL;
	int rc;

	if (ssh_get_server_publickey(sess, &key) != SSH_OK)
		return -1;
	ssh_options_get(sess, SSH_OPTIONS_KNOWNHOSTS, &user);
	ssh_options_get(sess, SSH_OPTIONS_GLOBAL_KNOWNHOSTS, &global);
	rc = check_file(user, name, key, st, revoked);
	if (st != NULL ? *st != SSH_KNOWN_HOSTS_OK : !*revoked)
		rc |= check_file(global, name, key, st, revoked);
	ssh_string_free_char(user);
	ssh_string_free_char(global);
	ssh_key_free(key);
	return rc;
}

enum ssh_known_hosts_e
ph_knownhost_check(ssh_session sess, const char *name)
{
	enum ssh_known_hosts_e st = SSH_KNOWN_HOSTS_NOT_FOUND;
	int bad = check_files(sess, name, &st, NULL) != 0;

	/* No key, or an unreadable file that could hold the entry that says
	 * otherwise. */
	if (bad && st != SSH_KNOWN_HOSTS_OK && st != SSH_KNOWN_HOSTS_CHANGED)
		return SSH_KNOWN_HOSTS_ERROR;
	return st;
}

int
ph_knownhost_revoked(ssh_session sess, const char *name)
{
	int revoked = 0, rc = check_files(sess, name, NULL, &revoked);

	return revoked ? 1 : rc;
}

int
ph_knownhost_add(ssh_session sess, const char *name, char *why, size_t whylen)
{
	char *file = NULL, *b64 = NULL;
	ssh_key key = NULL;
	const char *type;
	int rc = -1, last = '\n';
	FILE *f = NULL;

	snprintf(why, whylen, "out of memory");
	if (!ph_knownhost_name_ok(name)) {
		snprintf(why, whylen, "HostKeyAlias '%s' cannot name a known_hosts entry", name);
		return -1;
	}
	if (ssh_get_server_publickey(sess, &key) != SSH_OK ||
	    (type = ssh_key_type_to_char(ssh_key_type(key))) == NULL ||
	    ssh_pki_export_pubkey_base64(key, &b64) != SSH_OK)
		goto out;
	if (ssh_options_get(sess, SSH_OPTIONS_KNOWNHOSTS, &file) != SSH_OK || file == NULL) {
		snprintf(why, whylen, "no known_hosts file is set");
		goto out;
	}
	/* A last line without its newline would run into ours. */
	if ((f = fopen(file, "r")) != NULL) {
		if (fseek(f, -1, SEEK_END) == 0)
			last = fgetc(f);
		fclose(f);
	}
	if ((f = fopen(file, "a")) == NULL) {
		snprintf(why, whylen, "%s", strerror(errno));
		goto out;
	}
	if (fprintf(f, "%s%s %s %s\n", last == '\n' ? "" : "\n", name, type, b64) < 0) {
		snprintf(why, whylen, "%s", strerror(errno));
		fclose(f);
		goto out;
	}
	if (fclose(f) != 0) {
		snprintf(why, whylen, "%s", strerror(errno));
		goto out;
	}
	rc = 0;
out:
	ssh_string_free_char(file);
	ssh_string_free_char(b64);
	ssh_key_free(key);
	return rc;
}
