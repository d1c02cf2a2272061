/* SPDX-License-Identifier: ISC */
/* Shell patterns ('*', '?', '[...]', '\\'), matched as POSIX fnmatch does
 * in the C locale, byte by byte, without FNM_PERIOD: the filters' one rule
 * set on every OS (Windows' C library has no fnmatch). Core: plain C. */
#ifndef PH_PATTERN_H
#define PH_PATTERN_H

/* '*', '?' and bracket expressions never match a '/' (FNM_PATHNAME). */
#define PH_PATTERN_PATHNAME 1

/* 1 when name matches pat, else 0 (also for a pattern fnmatch calls
 * ill-formed: an unknown [:class:], a trailing '\\', an unfinished range).
 * A '[' with no closing ']' is a plain '['; "[!...]" and "[^...]" negate;
 * ranges and classes compare bytes (ASCII classes, as in the C locale).
 * Matches glibc's fnmatch(pat, name, flags) in the C locale case by case
 * (tests/unit/test_pattern.c compares them). */
int ph_pattern_match(const char *pat, const char *name, int flags);

#endif
