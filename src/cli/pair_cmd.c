/* SPDX-License-Identifier: ISC */
/* `phsync pair` and `phsync doctor`: the command lines around
 * phsync_pair() and phsync_doctor() (include/phsync/pair.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "phsync/pair.h"
#include "phsync/phsync.h"
#include "cli.h"
#include "opts.h"
#include "output.h"
#include "tty.h"

static const char pair_usage[] =
"usage: phsync pair [OPTIONS] NAME [USER@]ADDRESS[:PORT]\n"
"\n"
"Sets up the phone at ADDRESS for phsync, ssh, scp and rsync under the name\n"
"NAME: shows its host key to accept, logs in once with its password (asked\n"
"here), makes an ed25519 key if you have none (or uses the ssh agent's),\n"
"installs it in the phone's ~/.ssh/authorized_keys, checks that it logs in,\n"
"and adds 'Host NAME' to ~/.ssh/config. Then 'phsync pull NAME:/sdcard/DCIM\n"
"~/Pictures' works.\n"
"Without PORT, tries 8022 (Termux), 2222 (SimpleSSHD), 22. Safe to run again.\n"
"\n"
"Options:\n"
"  -F FILE                 the ssh config to read and add the Host block to\n"
"      --key FILE          the private key to install (made when missing;\n"
"                          default ~/.ssh/id_ed25519, or id_ecdsa, id_rsa)\n"
"      --authorized-keys PATH  where the phone's server reads keys from\n"
"                          (default .ssh/authorized_keys in the login folder)\n"
"      --timeout SEC       give up on a silent server after SEC seconds\n"
"  -v, --verbose           also libssh's debug output\n"
"  -h, --help              this text\n"
"\n"
"Exit codes: 0 paired (or already), 1 error (NAME taken for another host,\n"
"local I/O), 2 usage, 3 cannot connect or log in (wrong password: nothing\n"
"written), 4 host key not accepted or changed.\n";

static const char doctor_usage[] =
"usage: phsync doctor [OPTIONS] [USER@]HOST[:DIR]\n"
"\n"
"Checks a pair as a sync would use it, asking nothing, one line each:\n"
"reachable, host key known, key login, SFTP, its extensions (posix-rename,\n"
"fsync, copy-data, limits, statvfs), whether the remote runs commands (the\n"
"helper), whether times can be set, case sensitivity and free space of DIR\n"
"(default: the login folder). Writes only a temp file in DIR, removed after.\n"
"\n"
"Options:\n"
"  -F FILE         read this ssh config instead of ~/.ssh/config\n"
"      --json      one JSON object per check, then a summary\n"
"      --timeout SEC  give up on a silent server after SEC seconds\n"
"  -v, --verbose   also libssh's debug output\n"
"  -h, --help      this text\n"
"\n"
"Exit codes: 0 a sync can run (warnings are limits it copes with), 1 the\n"
"folder or SFTP fails, 3 unreachable or no key login, 4 host key unknown or\n"
"changed.\n";

static void
pair_note(const char *msg, void *arg)
{
	char shown[2048];

	(void)arg;
	phsync_escape(shown, sizeof(shown), msg);
	printf("%s\n", shown);
	fflush(stdout);
}

/* Splits [USER@]ADDRESS[:PORT] ("[v6]:PORT" for IPv6). */
static int
split_address(char *s, const char **user, const char **addr, unsigned *port)
{
	char *at = strrchr(s, '@'), *colon, *end;

	*user = NULL;
	*port = 0;
	if (at != NULL) {
		*at = '\0';
		*user = s;
		s = at + 1;
	}
	if (s[0] == '[') {
		char *close = strchr(s, ']');

		if (close == NULL)
			return -1;
		*close = '\0';
		*addr = s + 1;
		colon = close[1] == ':' ? close + 1 : NULL;
		if (close[1] != '\0' && colon == NULL)
			return -1;
	} else {
		colon = strchr(s, ':');
		if (colon != NULL && strchr(colon + 1, ':') != NULL)
			colon = NULL; /* a bare IPv6 address */
		if (colon != NULL)
			*colon = '\0';
		*addr = s;
	}
	if (colon != NULL) {
		unsigned long v = strtoul(colon + 1, &end, 10);

		if (colon[1] == '\0' || *end != '\0' || v < 1 || v > 65535)
			return -1;
		*port = (unsigned)v;
	}
	return (*addr)[0] ? 0 : -1;
}

/* What to do when pairing failed, for the people who meet it. */
static void
pair_advice(int rc, const struct phsync_pair_result *res, const char *name)
{
	if (rc == PHSYNC_ECONNECT)
		fputs("Is the SSH server running on the phone (Termux: run 'sshd'; SimpleSSHD: tap\n"
		      "Start), is the phone on the same network, and is the address right (Termux:\n"
		      "'ip addr'; SimpleSSHD shows it)? Apps on other ports: ADDRESS:PORT.\n", stderr);
	else if (rc == PHSYNC_EAUTH && res->port != 0 && !(res->auth & PHSYNC_AUTH_PASSWORD))
		fputs("The phone accepts no password, only keys. Termux: set one with 'passwd' in\n"
		      "Termux; SimpleSSHD: leave its authorized_keys empty and use the one-time\n"
		      "password the app shows. Or copy your public key to the phone by hand.\n",
		      stderr);
	else if (rc == PHSYNC_EAUTH)
		fputs("Password refused: Termux uses the one set with 'passwd' in Termux, SimpleSSHD\n"
		      "the one-time password its screen shows. Nothing was written.\n", stderr);
	else if (rc == PHSYNC_EREFUSED)
		fprintf(stderr, "Nothing was changed; 'phsync pair' with another NAME than '%s' "
		        "works.\n", name);
}

/* What pair says at its end: the error and advice, or what it did. */
static void
pair_said(phsync_ctx *ctx, int rc, const struct phsync_pair_options *po,
          const struct phsync_pair_result *res)
{
	char shown[2048];

	if (rc != 0) {
		phsync_escape(shown, sizeof(shown), phsync_ctx_error(ctx));
		fprintf(stderr, "phsync: %s\n", shown);
		pair_advice(rc, res, po->name);
	} else if (!res->host_key_added && !res->key_created && !res->key_installed &&
	           !res->config_added) {
		printf("'%s' was already paired; nothing changed.\n", po->name);
	} else {
		printf("Paired. Try: phsync pull %s:/sdcard/DCIM ~/Pictures/%s\n"
		       "(ssh %s, scp and rsync know the name too%s)\n", po->name, po->name, po->name,
		       po->ssh_config ? " with -F" : "");
	}
}

/* pair's own options. */
enum { O_KEY = CLI_O_OWN, O_AUTH_KEYS };

static int
pair_opt(int key, const char *arg, void *p)
{
	struct phsync_pair_options *po = p;

	if (key == O_KEY)
		po->key_file = arg;
	else if (key == O_AUTH_KEYS)
		po->authorized_keys = arg;
	return CLI_GO_ON;
}

int
cli_pair_main(int argc, char **argv)
{
	static const struct option own[] = {
		{ "key", required_argument, NULL, O_KEY },
		{ "authorized-keys", required_argument, NULL, O_AUTH_KEYS },
		{ NULL, 0, NULL, 0 },
	};
	static const char *const help[] = { pair_usage, NULL };
	struct phsync_pair_options po;
	const struct cli_cmd cmd = { "pair", CLI_SSH_CONFIG | CLI_TIMEOUT | CLI_VERBOSE, "", own,
	                             help, 0, pair_opt, &po };
	struct phsync_pair_result res;
	struct cli_args a;
	phsync_ctx *ctx = NULL;
	char *addr = NULL;
	int rc, code;

	memset(&po, 0, sizeof(po));
	cli_args_init(&a);
	if ((rc = cli_parse(&cmd, &argc, argv, &a)) != CLI_GO_ON)
		return rc;
	po.ssh_config = a.opts.ssh_config;
	po.timeout_s = a.opts.timeout_s;
	po.ssh_verbosity = a.out.verbose ? 3 : 0;
	if (argc - optind != 2)
		return cli_usage_error("pair", "pair needs a NAME and an ADDRESS (%d given)",
		                       argc - optind);
	po.name = argv[optind];
	if ((addr = strdup(argv[optind + 1])) == NULL)
		return CLI_EXIT_ERROR;
	if (split_address(addr, &po.user, &po.address, &po.port) != 0) {
		free(addr);
		return cli_usage_error("pair", "'%s' is not [USER@]ADDRESS[:PORT]", argv[optind + 1]);
	}
	if (!cli_has_tty()) {
		fputs("phsync: pair asks for the phone's password and host key: run it on a "
		      "terminal\n", stderr);
		free(addr);
		return CLI_EXIT_USAGE;
	}
	po.prompt = cli_tty_prompt;
	po.prompt_arg = &a.out;
	po.on_note = pair_note;
	if (phsync_ctx_new(&ctx) != 0) {
		free(addr);
		return CLI_EXIT_ERROR;
	}
	cli_catch_signals(ctx);
	rc = phsync_pair(ctx, &po, &res);
	cli_catch_signals(NULL);
	code = cli_exit_code(rc);
	pair_said(ctx, rc, &po, &res);
	phsync_ctx_free(ctx);
	free(addr);
	return code;
}

struct doctor_out {
	int json;
	int fails, warns;
};

static void
doctor_line(const struct phsync_check *c, void *arg)
{
	static const char *const word[] = { "ok", "warn", "FAIL", "skip" };
	static const char *const jword[] = { "ok", "warn", "fail", "skip" };
	struct doctor_out *d = arg;
	unsigned st = (unsigned)c->status < 4 ? (unsigned)c->status : 2;

	if (c->status == PHSYNC_CHECK_FAIL)
		d->fails++;
	if (c->status == PHSYNC_CHECK_WARN)
		d->warns++;
	if (d->json) {
		fputs("{\"event\":\"check\",\"check\":", stdout);
		cli_json_string(stdout, c->name);
		printf(",\"status\":\"%s\",\"detail\":", jword[st]);
		cli_json_string(stdout, c->detail);
		fputs(",\"value\":", stdout);
		cli_json_string(stdout, c->value);
		fputs("}\n", stdout);
	} else {
		printf("%-4s  %-11s %s\n", word[st], c->name, c->detail);
	}
	fflush(stdout);
}

int
cli_doctor_main(int argc, char **argv)
{
	static const char *const help[] = { doctor_usage, NULL };
	const struct cli_cmd cmd = { "doctor", CLI_SSH_CONFIG | CLI_JSON | CLI_TIMEOUT |
	                             CLI_VERBOSE, "", NULL, help, 0, NULL, NULL };
	struct phsync_doctor_options dopt;
	struct doctor_out d = { 0, 0, 0 };
	struct cli_args a;
	phsync_ctx *ctx = NULL;
	int rc, code;

	memset(&dopt, 0, sizeof(dopt));
	cli_args_init(&a);
	if ((rc = cli_parse(&cmd, &argc, argv, &a)) != CLI_GO_ON)
		return rc;
	dopt.ssh_config = a.opts.ssh_config;
	dopt.timeout_s = a.opts.timeout_s;
	dopt.ssh_verbosity = a.out.verbose ? 3 : 0;
	d.json = a.out.json;
	if (argc - optind != 1)
		return cli_usage_error("doctor", "doctor needs one HOST or HOST:DIR (%d given)",
		                       argc - optind);
	dopt.on_check = doctor_line;
	dopt.check_arg = &d;
	if (phsync_ctx_new(&ctx) != 0)
		return CLI_EXIT_ERROR;
	cli_catch_signals(ctx);
	rc = phsync_doctor(ctx, argv[optind], &dopt);
	cli_catch_signals(NULL);
	code = cli_exit_code(rc);
	if (d.json)
		printf("{\"event\":\"doctor\",\"failed\":%d,\"exit\":%d}\n", d.fails, code);
	else if (rc == 0)
		printf("A sync can run%s.\n", d.warns ? " (warnings are limits phsync copes with)" : "");
	phsync_ctx_free(ctx);
	return code;
}
