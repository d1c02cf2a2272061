/* SPDX-License-Identifier: ISC */
/* A stat's times to the nanosecond, by the name the system gives them:
 * st_mtim and st_ctim (POSIX.1-2008: Linux, the BSDs), st_mtimespec and
 * st_ctimespec (macOS), else whole seconds (st_mtime, st_ctime). Feature
 * tests in CMakeLists.txt; the arithmetic is the same for both names. */
#include <sys/stat.h>
#include <time.h>

#include "ph_config.h"
#include "platform.h"

#define NS 1000000000

#if defined(HAVE_STRUCT_STAT_ST_MTIM) || defined(HAVE_STRUCT_STAT_ST_MTIMESPEC)
#if defined(HAVE_STRUCT_STAT_ST_MTIM)
#define MTIM st_mtim
#define CTIM st_ctim
#else
#define MTIM st_mtimespec
#define CTIM st_ctimespec
#endif

static int64_t
ns(const struct timespec *t)
{
	return (int64_t)t->tv_sec * NS + t->tv_nsec;
}

int64_t
ph_st_mtime_ns(const struct stat *st)
{
	return ns(&st->MTIM);
}

int64_t
ph_st_ctime_ns(const struct stat *st)
{
	return ns(&st->CTIM);
}

uint32_t
ph_st_mtime_nsec(const struct stat *st)
{
	return (uint32_t)st->MTIM.tv_nsec;
}

#else /* whole seconds */

int64_t
ph_st_mtime_ns(const struct stat *st)
{
	return (int64_t)st->st_mtime * NS;
}

int64_t
ph_st_ctime_ns(const struct stat *st)
{
	return (int64_t)st->st_ctime * NS;
}

uint32_t
ph_st_mtime_nsec(const struct stat *st)
{
	(void)st;
	return 0;
}

#endif
