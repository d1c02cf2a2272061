/* SPDX-License-Identifier: ISC */
/* The few OS-specific pieces, chosen by feature tests (ph_config.h). */
#ifndef PH_PLATFORM_H
#define PH_PLATFORM_H

#include <stddef.h>
#include <stdint.h>

/* 1 when the CPU has AES instructions (AES-GCM is then the fastest cipher). */
int ph_cpu_has_aes(void);

/* Makes the data and metadata of fds durable. With several files on one
 * file system it may sync the whole file system once (syncfs) instead of
 * each file, which is far cheaper for many small files. Returns 0 or -errno. */
int ph_durable_sync(const int *fds, size_t n);

/* The time step (seconds) of the file system holding fd when it keeps
 * coarse times (FAT and exFAT: 2), else 0. */
int ph_fs_time_step(int fd);

/* Renames from (in folder fromdir) to to (in dirfd), failing with -EEXIST
 * instead of replacing an existing to. Returns 0 or -errno. */
int ph_rename_noreplace(int fromdir, const char *from, int dirfd, const char *to);

/* Starts writing back a written range early so a later fsync is short and
 * dirty memory stays bounded; a no-op where the OS has no such call. */
void ph_writeback_hint(int fd, uint64_t off, uint64_t len);

/* Raises the soft open-file limit to the hard one; returns the new soft
 * limit (or the old one if it could not be raised). */
uint64_t ph_raise_nofile(void);

#endif
