/* SPDX-License-Identifier: ISC */
/* pfs.h's PH_O_PRIVATE on Windows: a new file that only the current user
 * may open. Windows has no permission bits; a file takes the ACL its
 * folder passes on, which outside the profile (a key made with --key
 * D:\keys\phone) lets every user of the machine read it, and OpenSSH for
 * Windows then refuses the key and the config as "UNPROTECTED". The file
 * is created with a protected DACL (no inherited entries) of one entry:
 * the current user, full access, as OpenSSH for Windows' ssh-keygen does. */
#include <errno.h>
#include <windows.h>
#include <sddl.h>
#include <stdio.h>

#include "win32.h"

/* The current user's SID as a string ("S-1-5-21-..."), LocalFree'd by
 * the caller. */
static int
user_sid_string(wchar_t **out)
{
	HANDLE tok = NULL;
	union {
		TOKEN_USER tu;
		char bytes[sizeof(TOKEN_USER) + SECURITY_MAX_SID_SIZE];
	} u;
	DWORD len = 0;
	int rc = 0;

	if (!OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &tok))
		return ph_win_errno(GetLastError());
	if (!GetTokenInformation(tok, TokenUser, &u, sizeof(u), &len) ||
	    !ConvertSidToStringSidW(u.tu.User.Sid, out))
		rc = ph_win_errno(GetLastError());
	CloseHandle(tok);
	return rc;
}

int
ph_win_private_sd(void **out)
{
	wchar_t *sid = NULL, sddl[256];
	PSECURITY_DESCRIPTOR sd = NULL;
	int rc;

	if ((rc = user_sid_string(&sid)) != 0)
		return rc;
	/* D:P protected DACL; A allow; FA file all access; to the user alone. */
	if (_snwprintf(sddl, sizeof(sddl) / sizeof(sddl[0]), L"D:P(A;;FA;;;%ls)", sid) < 0)
		rc = -ENAMETOOLONG;
	else if (!ConvertStringSecurityDescriptorToSecurityDescriptorW(sddl, SDDL_REVISION_1,
	                                                                &sd, NULL))
		rc = ph_win_errno(GetLastError());
	LocalFree(sid);
	if (rc == 0)
		*out = sd;
	return rc;
}
