/* SPDX-License-Identifier: ISC */
/* Temp and aside names with owner and check value; see tempname.h. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <xxhash.h>

#include "phsync/phsync.h"
#include "platform.h"
#include "tempname.h"

#define TAG ".phsync-"
#define TAG_LEN 8
/* After the final name: TAG, K, '.', 16 hex, '.', 8 hex, '.', 8 hex. */
#define SUFFIX_LEN (TAG_LEN + 1 + 1 + 16 + 1 + 8 + 1 + 8)
#define CHECK_SEED 0x70687379u /* "phsy" */
#define FOREIGN_STALE_MIN (24 * 60)
#define PARTIAL_STALE_MIN (7 * 24 * 60)
#define MINUTE_MASK 0xffffffu

void
ph_temp_owner_self(struct ph_temp_owner *o)
{
	char host[256];

	ph_hostname(host, sizeof(host));
	o->host = XXH32(host, strlen(host), CHECK_SEED);
	o->pid = (uint32_t)getpid();
}

static uint32_t
random32(void)
{
	uint32_t r;

	if (ph_random(&r, sizeof(r)) == 0)
		return r;
	/* No entropy source: unique enough with the time; O_EXCL catches the rest. */
	{
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		return (uint32_t)ts.tv_nsec ^ (uint32_t)ts.tv_sec * 2654435761u;
	}
}

size_t
ph_temp_keep(const char *final, size_t flen)
{
	size_t keep = PH_TEMP_NAME_ROOM;

	if (flen <= PH_TEMP_NAME_ROOM)
		return flen;
	/* Cut at a UTF-8 boundary so the name stays valid text; a name that
	 * is not UTF-8 has none to keep (cut to nothing, the temp would be
	 * one its own parser refuses). */
	while (keep > 0 && ((unsigned char)final[keep] & 0xc0) == 0x80)
		keep--;
	return keep > 0 ? keep : PH_TEMP_NAME_ROOM;
}

int
ph_temp_name(char *buf, size_t len, const char *final, int k, const struct ph_temp_owner *o)
{
	size_t flen = strlen(final), keep = ph_temp_keep(final, flen);
	int n, truncated = keep < flen;

	if (flen == 0 || len < 256)
		return -1;
	n = snprintf(buf, len, ".%.*s" TAG "%c.%08x%08x.%06x%02x.", (int)keep, final,
	             truncated ? k - 'a' + 'A' : k, o->host, o->pid,
	             (unsigned)((uint64_t)time(NULL) / 60 & MINUTE_MASK), random32() & 0xffu);
	if (n < 0 || (size_t)n + 9 > len)
		return -1;
	snprintf(buf + n, len - (size_t)n, "%08x", XXH32(buf, (size_t)n, CHECK_SEED));
	return 0;
}

static int
hex_field(const char *p, size_t n, uint32_t *out)
{
	uint32_t v = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		char c = p[i];

		if (c >= '0' && c <= '9')
			v = v << 4 | (uint32_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v = v << 4 | (uint32_t)(c - 'a' + 10);
		else
			return -1;
	}
	*out = v;
	return 0;
}

int
ph_temp_parse(const char *name, size_t len, struct ph_temp_info *info)
{
	const char *s;
	uint32_t rnd, check;
	int k;

	if (len < 2 + SUFFIX_LEN || name[0] != '.')
		return 0;
	s = name + len - SUFFIX_LEN;
	if (memcmp(s, TAG, TAG_LEN) != 0)
		return 0;
	k = s[TAG_LEN];
	if (k != 't' && k != 'o' && k != 'p' && k != 'T' && k != 'O' && k != 'P')
		return 0;
	s += TAG_LEN + 1;
	if (s[0] != '.' || s[17] != '.' || s[26] != '.' ||
	    hex_field(s + 1, 8, &info->owner.host) != 0 ||
	    hex_field(s + 9, 8, &info->owner.pid) != 0 || hex_field(s + 18, 8, &rnd) != 0 ||
	    hex_field(s + 27, 8, &check) != 0)
		return 0;
	if (XXH32(name, len - 8, CHECK_SEED) != check)
		return 0;
	info->kind = k == 't' || k == 'T' ? PH_TEMP_NEW : k == 'o' || k == 'O' ? PH_TEMP_OLD :
	             PH_TEMP_PARTIAL;
	info->minute = rnd >> 8;
	info->truncated = k >= 'A' && k <= 'Z';
	info->final_off = 1;
	info->final_len = len - 1 - SUFFIX_LEN;
	return 1;
}

int
ph_temp_stale(const struct ph_temp_info *ti, const struct ph_temp_owner *self, int64_t now)
{
	const struct ph_temp_owner *owner = &ti->owner;
	uint32_t age = ((uint32_t)((uint64_t)now / 60) - ti->minute) & MINUTE_MASK;

	if (ti->kind == PH_TEMP_PARTIAL)
		return age > PARTIAL_STALE_MIN && age < (MINUTE_MASK >> 1);
	if (owner->host == self->host && owner->pid > 0 && owner->pid <= INT32_MAX) {
		if (owner->pid == self->pid)
			return 0;
		/* Someone else's that cannot be asked counts as alive. */
		return !ph_pid_alive(owner->pid);
	}
	/* Another host's: a day old by its name. An age in the upper half of
	 * the 24-bit range is a clock difference (made "in the future"). */
	return age > FOREIGN_STALE_MIN && age < (MINUTE_MASK >> 1);
}

#define CONFLICT_TAG ".phsync-conflict-"

int
ph_conflict_name(char *buf, size_t len, const char *final, int64_t when, unsigned n)
{
	const char *dot = strrchr(final, '.');
	size_t fl = strlen(final), stem, extl, room;
	char stamp[96];   /* room for any int the format could print */
	struct tm tm;
	time_t t = (time_t)when;

	if (fl == 0 || len < 256)
		return -1;
	if (dot == NULL || dot == final)
		dot = final + fl; /* no extension: "README", ".hidden" */
	stem = (size_t)(dot - final);
	extl = fl - stem;
	if (ph_localtime(t, &tm) != 0)
		memset(&tm, 0, sizeof(tm));
	if (n > 1)
		snprintf(stamp, sizeof(stamp), "%04d%02d%02d-%02d%02d%02d-%u", tm.tm_year + 1900,
		         tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, n);
	else
		snprintf(stamp, sizeof(stamp), "%04d%02d%02d-%02d%02d%02d", tm.tm_year + 1900,
		         tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
	/* 255 bytes at most: the stem gives way, then a very long extension. */
	room = 255 - (sizeof(CONFLICT_TAG) - 1) - strlen(stamp);
	if (extl > 32 && stem + extl > room)
		extl = 0, stem = fl;
	if (stem + extl > room) {
		stem = room > extl ? room - extl : 0;
		while (stem > 0 && ((unsigned char)final[stem] & 0xc0) == 0x80)
			stem--;
	}
	snprintf(buf, len, "%.*s" CONFLICT_TAG "%s%.*s", (int)stem, final, stamp, (int)extl,
	         final + fl - extl);
	return 0;
}

int
ph_is_conflict_name(const char *name)
{
	const char *p = strstr(name, CONFLICT_TAG);
	size_t i;

	if (p == NULL)
		return 0;
	p += sizeof(CONFLICT_TAG) - 1;
	for (i = 0; i < 15; i++)
		if (i == 8 ? p[i] != '-' : (p[i] < '0' || p[i] > '9'))
			return 0;
	return 1;
}

int
phsync_is_temp_name(const char *name)
{
	struct ph_temp_info ti;

	return name != NULL && ph_temp_parse(name, strlen(name), &ti);
}
