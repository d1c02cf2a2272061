/* ssh_config lookups (the keywords libssh 0.10 misreads) and HOST:PATH parsing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "phsync/phsync.h"
#include "sshconf.h"

static void
test_host_patterns(void **state)
{
	(void)state;
	assert_true(ph_sshconf_host_match("phone", "phone"));
	assert_true(ph_sshconf_host_match("PHONE", "phone"));
	assert_true(ph_sshconf_host_match("*.lan tablet", "pixel.lan"));
	assert_true(ph_sshconf_host_match("*.lan,tablet", "tablet"));
	assert_false(ph_sshconf_host_match("*.lan,!bad.lan", "bad.lan"));
	assert_true(ph_sshconf_host_match("*.lan,!bad.lan", "good.lan"));
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
	/* A Match block other than "Match all" never applies. */
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

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_host_patterns),
		cmocka_unit_test(test_lookup_first_match_wins_and_include),
		cmocka_unit_test(test_parse_remote),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
