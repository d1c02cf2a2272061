/* SPDX-License-Identifier: ISC */
/* pfs.h's PH_O_PRIVATE on Windows (platform/win32/private.c), under Wine:
 * a file made with it can be opened by no one but the user this process
 * runs as (and SYSTEM and the Administrators), which is what OpenSSH for
 * Windows asks of a private key and a config (pair writes both with it),
 * where a file made without it can be read by others; the file is still
 * written and read back by its owner; an existing file opened with the
 * flag is left as it was. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <windows.h>

#include "pfs.h"
#include "ut_fs.h"
#include "win32.h"

/* The file's security descriptor (its DACL), malloc'd. */
static PSECURITY_DESCRIPTOR
dacl_of(const char *path)
{
	wchar_t *w = NULL;
	DWORD need = 0;
	PSECURITY_DESCRIPTOR sd;

	assert_int_equal(ph_win_long_path(path, &w), 0);
	GetFileSecurityW(w, DACL_SECURITY_INFORMATION, NULL, 0, &need);
	assert_true(need > 0);
	sd = malloc(need);
	assert_non_null(sd);
	assert_true(GetFileSecurityW(w, DACL_SECURITY_INFORMATION, sd, need, &need));
	free(w);
	return sd;
}

/* 1 when sd lets no one but this user open the file, by OpenSSH for
 * Windows' rule for a private key or config: every entry of the DACL
 * allows the user, SYSTEM or the Administrators and no one else, and one
 * allows the user all access. (Windows keeps the one entry PH_O_PRIVATE
 * writes; Wine keeps the Unix mode it maps it to, 0600, and shows that as
 * SYSTEM and the user.) */
static int
owner_only(PSECURITY_DESCRIPTOR sd)
{
	union {
		TOKEN_USER tu;
		char bytes[sizeof(TOKEN_USER) + SECURITY_MAX_SID_SIZE];
	} u;
	DWORD len, i;
	BOOL present, defaulted;
	PACL acl = NULL;
	ACCESS_ALLOWED_ACE *ace;
	HANDLE tok;
	int user = 0;

	assert_true(OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &tok));
	assert_true(GetTokenInformation(tok, TokenUser, &u, sizeof(u), &len));
	CloseHandle(tok);
	assert_true(GetSecurityDescriptorDacl(sd, &present, &acl, &defaulted));
	if (!present || acl == NULL)
		return 0; /* no DACL: everyone */
	for (i = 0; i < acl->AceCount; i++) {
		PSID sid;

		assert_true(GetAce(acl, i, (void **)&ace));
		sid = (PSID)&ace->SidStart;
		if (ace->Header.AceType != ACCESS_ALLOWED_ACE_TYPE)
			continue; /* a deny entry lets no one in */
		if (EqualSid(sid, u.tu.User.Sid))
			user |= (ace->Mask & FILE_ALL_ACCESS) == FILE_ALL_ACCESS;
		else if (!IsWellKnownSid(sid, WinLocalSystemSid) &&
		         !IsWellKnownSid(sid, WinBuiltinAdministratorsSid))
			return 0;
	}
	return user;
}

static void
write_file(const char *path, int flags, const char *data)
{
	int fd = ph_openat(PH_AT_CWD, path, PH_O_WRONLY | PH_O_CREAT | flags, 0600);

	assert_true(fd >= 0);
	assert_int_equal(ph_pwrite(fd, data, strlen(data), 0), (int64_t)strlen(data));
	assert_int_equal(ph_close(fd), 0);
}

static void
test_private_file(void **state)
{
	char dir[1024], key[1100], plain[1100], buf[64] = { 0 };
	PSECURITY_DESCRIPTOR sd;
	int fd;

	(void)state;
	assert_int_equal(ut_scratch(dir, sizeof(dir), "private"), 0);
	snprintf(key, sizeof(key), "%s/phsync_ed25519", dir);
	snprintf(plain, sizeof(plain), "%s/phsync_ed25519.pub", dir);
	write_file(key, PH_O_EXCL | PH_O_PRIVATE, "-----BEGIN OPENSSH PRIVATE KEY-----\n");
	write_file(plain, PH_O_EXCL, "ssh-ed25519 AAAA\n");
	sd = dacl_of(key);
	assert_true(owner_only(sd));
	free(sd);
	sd = dacl_of(plain);
	assert_false(owner_only(sd));
	free(sd);
	/* Its owner reads it back. */
	fd = ph_openat(PH_AT_CWD, key, PH_O_RDONLY, 0);
	assert_true(fd >= 0);
	assert_int_equal(ph_pread(fd, buf, sizeof(buf) - 1, 0), 36);
	assert_string_equal(buf, "-----BEGIN OPENSSH PRIVATE KEY-----\n");
	assert_int_equal(ph_close(fd), 0);
	/* An existing file opened with the flag keeps its DACL. */
	write_file(plain, PH_O_PRIVATE, "ssh-ed25519 BBBB\n");
	sd = dacl_of(plain);
	assert_false(owner_only(sd));
	free(sd);
	ut_rmtree(dir);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_private_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
