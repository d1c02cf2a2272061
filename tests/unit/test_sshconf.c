/* SPDX-License-Identifier: ISC */
/* ssh_config lookups (the keywords libssh 0.10 misreads) and HOST:PATH parsing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <cmocka.h>

#include "phsync/phsync.h"
#include "sshconf.h"

static void
test_host_patterns(void **state)
{
	(void)state;
	assert_true(ph_sshconf_host_match("phone", "phone"));
	assert_false(ph_sshconf_host_match("PHONE", "phone")); /* as ssh -G: case counts */
	assert_true(ph_sshconf_host_match("*.lan tablet", "pixel.lan"));
	/* White space separates a Host line's patterns; "a,b" is one pattern. */
	assert_false(ph_sshconf_host_match("*.lan,tablet", "tablet"));
	assert_true(ph_sshconf_host_match("*.lan,tablet", "*.lan,tablet"));
	assert_false(ph_sshconf_host_match("*.lan !bad.lan", "bad.lan"));
	assert_true(ph_sshconf_host_match("*.lan !bad.lan", "good.lan"));
	assert_false(ph_sshconf_host_match("!phone", "phone"));
	assert_false(ph_sshconf_host_match("!phone", "other")); /* negation alone matches nothing */
	assert_true(ph_sshconf_host_match("ph?ne", "phone"));
	assert_false(ph_sshconf_host_match("phone", "phone2"));
}

static void
test_lookup_first_match_wins_and_include(void **state)
{
	char dir[] = "/tmp/phsync-sshconf-XXXXXX", main_cfg[256], inc[256], val[64];
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(main_cfg, sizeof(main_cfg), "%s/config", dir);
	snprintf(inc, sizeof(inc), "%s/extra.conf", dir);
	f = fopen(inc, "w");
	assert_non_null(f);
	fputs("Host tablet\n  StrictHostKeyChecking no\n", f);
	fclose(f);
	f = fopen(main_cfg, "w");
	assert_non_null(f);
	fprintf(f, "# comment\n"
	           "Host phone\n"
	           "  HostName 10.0.0.2\n"
	           "  StrictHostKeyChecking=accept-new\n"
	           "Match exec \"false\"\n"
	           "  Ciphers aes256-ctr\n"
	           "Host *\n"
	           "  StrictHostKeyChecking yes\n"
	           "  ProxyJump \"jump host\"\n"
	           "Include %s\n", inc);
	fclose(f);
	assert_int_equal(ph_sshconf_get(main_cfg, "phone", "StrictHostKeyChecking", val, sizeof(val)), 1);
	assert_string_equal(val, "accept-new");
	assert_int_equal(ph_sshconf_get(main_cfg, "other", "stricthostkeychecking", val, sizeof(val)), 1);
	assert_string_equal(val, "yes");
	/* Match exec never applies (phsync runs no commands from the config). */
	assert_int_equal(ph_sshconf_get(main_cfg, "phone", "Ciphers", val, sizeof(val)), 0);
	assert_int_equal(ph_sshconf_get(main_cfg, "phone", "ProxyJump", val, sizeof(val)), 1);
	assert_string_equal(val, "jump host");
	/* "Host *" came first for tablet: its own later block does not win. */
	assert_int_equal(ph_sshconf_get(main_cfg, "tablet", "StrictHostKeyChecking", val, sizeof(val)), 1);
	assert_string_equal(val, "yes");
	assert_int_equal(ph_sshconf_get(main_cfg, "tablet", "NoSuchKeyword", val, sizeof(val)), 0);
	assert_int_equal(ph_sshconf_get("/nonexistent/config", "phone", "Port", val, sizeof(val)),
	                 PHSYNC_ENOENT);
	unlink(inc);
	unlink(main_cfg);
	rmdir(dir);
}

static void
test_parse_remote(void **state)
{
	char *u, *h, *p;

	(void)state;
	assert_int_equal(phsync_parse_remote("phone:/sdcard/DCIM", &u, &h, &p), 0);
	assert_null(u);
	assert_string_equal(h, "phone");
	assert_string_equal(p, "/sdcard/DCIM");
	free(h);
	free(p);
	assert_int_equal(phsync_parse_remote("bob@phone:", &u, &h, &p), 0);
	assert_string_equal(u, "bob");
	assert_string_equal(h, "phone");
	assert_string_equal(p, "");
	free(u);
	free(h);
	free(p);
	assert_int_equal(phsync_parse_remote("[::1]:DCIM", &u, &h, &p), 0);
	assert_string_equal(h, "::1");
	assert_string_equal(p, "DCIM");
	free(h);
	free(p);
	/* Local paths are no remote spec: a '/' before the ':' (as rsync). */
	assert_int_equal(phsync_parse_remote("./a:b", &u, &h, &p), PHSYNC_EINVAL);
	assert_int_equal(phsync_parse_remote("/tmp/x", &u, &h, &p), PHSYNC_EINVAL);
	assert_int_equal(phsync_parse_remote(":path", &u, &h, &p), PHSYNC_EINVAL);
	assert_int_equal(phsync_parse_remote("@host:path", &u, &h, &p), PHSYNC_EINVAL);
	assert_int_equal(phsync_parse_remote("[::1:path", &u, &h, &p), PHSYNC_EINVAL);
	assert_null(u);
	assert_null(h);
	assert_null(p);
}

/* What ssh itself says: `ssh -G -F FILE HOST`, value of keyword (lower
 * case), normalised as below; "" when ssh prints none. */
static void
ssh_g(const char *file, const char *host, const char *keyword, char *out, size_t len)
{
	char cmd[1024], line[2048];
	FILE *p;

	out[0] = '\0';
	snprintf(cmd, sizeof(cmd), "ssh -G -F '%s' '%s' 2>/dev/null", file, host);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p) != NULL) {
		size_t kl = strlen(keyword);

		if (strncmp(line, keyword, kl) == 0 && line[kl] == ' ') {
			line[strcspn(line, "\n")] = '\0';
			snprintf(out, len, "%s", line + kl + 1);
		}
	}
	assert_int_equal(pclose(p), 0);
}

/* ssh -G spells yes/no as true/false. */
static const char *
norm(const char *v)
{
	if (strcasecmp(v, "yes") == 0 || strcasecmp(v, "true") == 0)
		return "true";
	if (strcasecmp(v, "no") == 0 || strcasecmp(v, "off") == 0 || strcasecmp(v, "false") == 0)
		return "false";
	return v;
}

/* Tricky configs, each read by phsync and by OpenSSH's ssh -G. */
static void
test_agrees_with_ssh_G(void **state)
{
	static const char *const configs[] = {
		/* Host a,b is one pattern, not two. */
		"Host phone,tablet\n  StrictHostKeyChecking no\n"
		"Host *\n  StrictHostKeyChecking yes\n",
		/* A stricter value under a matching Match comes first and wins. */
		"Match host phone\n  StrictHostKeyChecking yes\n"
		"Host phone\n  StrictHostKeyChecking accept-new\n",
		/* Match host looks at HostName; originalhost at the name typed. */
		"Host phone\n  HostName 192.0.2.7\n"
		"Match host 192.0.2.*\n  StrictHostKeyChecking true\n"
		"Match originalhost phone\n  StrictHostKeyChecking no\n  ProxyJump jump1\n",
		"Host phone\n  HostName %h.example\n"
		"Match host phone.example,other\n  StrictHostKeyChecking false\n",
		/* Negated criteria, all criteria must hold. */
		"Match !host tablet originalhost ph*\n  StrictHostKeyChecking accept-new\n",
		"Match host phone !originalhost phone\n  StrictHostKeyChecking no\n"
		"Host *\n  StrictHostKeyChecking ask\n",
		/* Match final counts only for what the first pass left unset. */
		"Match final\n  StrictHostKeyChecking yes\n  ProxyJump late\n"
		"Host phone\n  StrictHostKeyChecking no\n",
		/* Match exec is never run by phsync; here it would fail anyway. */
		"Match exec false\n  StrictHostKeyChecking no\n"
		"Host phone\n  ProxyJump bob@hop:2222\n",
		/* keyword=value forms and quotes. */
		"Host phone\n  StrictHostKeyChecking=accept-new\n  ProxyJump = a,b\n",
		"Host \"phone\"\n  StrictHostKeyChecking \"no\"\n",
		/* Negation in a Host line. */
		"Host * !phone\n  StrictHostKeyChecking no\nHost *\n  StrictHostKeyChecking yes\n",
		"Match all\n  Ciphers aes256-ctr\n",
		/* Case: Host lines count it, Match lists do not. */
		"Host Phone\n  StrictHostKeyChecking no\n"
		"Match originalhost PHONE\n  StrictHostKeyChecking accept-new\n",
		"Match host PHONE\n  StrictHostKeyChecking no\n",
	};
	static const char *const hosts[] = { "phone", "tablet", "phone.lan", "Phone" };
	static const char *const keys[] = { "StrictHostKeyChecking", "ProxyJump", "Ciphers" };
	char dir[] = "/tmp/phsync-sshg-XXXXXX", path[256];
	size_t c, h, k;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/config", dir);
	for (c = 0; c < sizeof(configs) / sizeof(configs[0]); c++) {
		FILE *f = fopen(path, "w");

		assert_non_null(f);
		fputs(configs[c], f);
		fclose(f);
		for (h = 0; h < sizeof(hosts) / sizeof(hosts[0]); h++) {
			for (k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
				char ours[512] = "", theirs[512], lk[64];
				size_t i;
				int rc = ph_sshconf_get(path, hosts[h], keys[k], ours, sizeof(ours));

				for (i = 0; keys[k][i] && i + 1 < sizeof(lk); i++)
					lk[i] = (char)(keys[k][i] | 0x20);
				lk[i] = '\0';
				ssh_g(path, hosts[h], lk, theirs, sizeof(theirs));
				if (rc != 1) {
					/* Unset: ssh -G shows its default then. */
					if (strcmp(lk, "stricthostkeychecking") == 0)
						snprintf(ours, sizeof(ours), "ask");
					else if (strcmp(lk, "proxyjump") == 0)
						ours[0] = '\0';
					else
						continue; /* Ciphers: a long default list */
				}
				if (strcmp(norm(ours), norm(theirs)) != 0)
					fail_msg("config %zu, host %s, %s: phsync '%s', ssh -G '%s'\n%s", c,
					         hosts[h], keys[k], ours, theirs, configs[c]);
			}
		}
	}
	unlink(path);
	rmdir(dir);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_host_patterns),
		cmocka_unit_test(test_lookup_first_match_wins_and_include),
		cmocka_unit_test(test_parse_remote),
		cmocka_unit_test(test_agrees_with_ssh_G),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
