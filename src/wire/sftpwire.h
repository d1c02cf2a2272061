/* SPDX-License-Identifier: ISC */
/* The SFTP v3 wire (draft-ietf-secsh-filexfer-02) and phsync's extensions
 * to it (docs/PROTOCOL.md), written once for both ends: the client
 * (transport/sftp.c) and the helper (helper/serve*.c). Packet types, status
 * codes, open and attribute flags, the extension names either end sends or
 * looks for, the helper protocol's names and versions, and the one
 * attribute encoder and decoder. Needs only libc and core's bounded buffers:
 * it builds into the static helper for a phone. Internal. */
#ifndef PH_SFTPWIRE_H
#define PH_SFTPWIRE_H

#include <stdint.h>

#include "buf.h"

/* Packet types. */
enum {
	PH_FXP_INIT = 1, PH_FXP_VERSION = 2, PH_FXP_OPEN = 3, PH_FXP_CLOSE = 4,
	PH_FXP_READ = 5, PH_FXP_WRITE = 6, PH_FXP_LSTAT = 7, PH_FXP_FSTAT = 8,
	PH_FXP_SETSTAT = 9, PH_FXP_FSETSTAT = 10, PH_FXP_OPENDIR = 11,
	PH_FXP_READDIR = 12, PH_FXP_REMOVE = 13, PH_FXP_MKDIR = 14,
	PH_FXP_RMDIR = 15, PH_FXP_REALPATH = 16, PH_FXP_STAT = 17,
	PH_FXP_RENAME = 18, PH_FXP_READLINK = 19, PH_FXP_SYMLINK = 20,
	PH_FXP_STATUS = 101, PH_FXP_HANDLE = 102, PH_FXP_DATA = 103,
	PH_FXP_NAME = 104, PH_FXP_ATTRS = 105, PH_FXP_EXTENDED = 200,
	PH_FXP_EXTENDED_REPLY = 201
};
/* OPEN's pflags. */
enum {
	PH_FXF_READ = 0x01, PH_FXF_WRITE = 0x02, PH_FXF_APPEND = 0x04,
	PH_FXF_CREAT = 0x08, PH_FXF_TRUNC = 0x10, PH_FXF_EXCL = 0x20
};
/* STATUS codes. */
enum {
	PH_FX_OK = 0, PH_FX_EOF = 1, PH_FX_NO_SUCH_FILE = 2,
	PH_FX_PERMISSION_DENIED = 3, PH_FX_FAILURE = 4, PH_FX_BAD_MESSAGE = 5,
	PH_FX_NO_CONNECTION = 6, PH_FX_CONNECTION_LOST = 7,
	PH_FX_OP_UNSUPPORTED = 8
};
/* Attribute flags. */
enum {
	PH_ATTR_SIZE = 0x1, PH_ATTR_UIDGID = 0x2, PH_ATTR_PERMISSIONS = 0x4,
	PH_ATTR_ACMODTIME = 0x8, PH_ATTR_EXTENDED = 0x80000000u
};

/* Extension names (in VERSION, and as EXTENDED requests). */
#define PH_XN_POSIX_RENAME "posix-rename@openssh.com"
#define PH_XN_FSYNC "fsync@openssh.com"
#define PH_XN_LIMITS "limits@openssh.com"
#define PH_XN_STATVFS "statvfs@openssh.com"
#define PH_XN_HARDLINK "hardlink@openssh.com"
#define PH_XN_LSETSTAT "lsetstat@openssh.com"
#define PH_XN_COPY_DATA "copy-data"
#define PH_XN_CHECK_FILE "check-file"
#define PH_XN_CHECK_FILE_HANDLE "check-file-handle"

/* phsync's helper protocol: the versions this build speaks (the value of
 * the PH_HELPER_EXT extension in INIT, the client's highest, and in
 * VERSION, the one agreed) and its requests. */
#define PH_HELPER_PROTO_MIN 1
#define PH_HELPER_PROTO_MAX 1
#define PH_HELPER_EXT "phsync@phsync.org"
#define PH_HELPER_SIG "phsync-sig@phsync.org"
#define PH_HELPER_DSTART "phsync-delta-start@phsync.org"
#define PH_HELPER_DREAD "phsync-delta-read@phsync.org"

#define PH_SFTP_MAX_HANDLE 256        /* the spec's bound on handle strings */

/* File attributes as the wire carries them (the fields flags does not name
 * are 0). Extended attribute pairs are read past and never kept. */
struct ph_sftp_attrs {
	uint32_t flags;
	uint64_t size;
	uint32_t uid, gid;
	uint32_t perm;
	uint32_t atime, mtime;
};

/* Reads an ATTRS structure at r: every field the flags name, and the
 * extended pairs (each at least 8 bytes, so a huge count cannot loop past
 * the bytes there are), each length checked against what is left. Returns
 * 0 with a filled and r advanced, or PHSYNC_EPROTO when it is cut short. */
int ph_wire_get_attrs(struct ph_rd *r, struct ph_sftp_attrs *a);
/* Appends a's flags and the fields they name in the wire's order (a NULL
 * a: flags 0, no attributes). PH_ATTR_EXTENDED is never sent: the flag is
 * cleared, as no pairs follow. Returns 0 or PHSYNC_ENOMEM. */
int ph_wire_put_attrs(struct ph_buf *b, const struct ph_sftp_attrs *a);

#endif
