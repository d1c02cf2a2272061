/* SPDX-License-Identifier: ISC */
/* The INI reader of inird.h: libinih's rules, for builds without it. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "inird.h"

#define LINE_MAX_READ 200   /* libinih's INI_MAX_LINE: 199 bytes a read */
#define NAME_KEEP 50        /* its MAX_SECTION and MAX_NAME, NUL included */

static char *
skip_space(char *s)
{
	while (*s && isspace((unsigned char)*s))
		s++;
	return s;
}

/* Cuts white space off the end of s, whose NUL is at end. */
static void
cut_space(char *s, char *end)
{
	while (end > s && isspace((unsigned char)end[-1]))
		*--end = '\0';
}

/* The first of stop's characters in s, or of an inline comment (';' after
 * white space), or s's NUL. */
static char *
find_stop(char *s, const char *stop)
{
	int after_space = 0;

	for (; *s; s++) {
		if (stop != NULL && strchr(stop, *s) != NULL)
			break;
		if (after_space && *s == ';')
			break;
		after_space = isspace((unsigned char)*s) != 0;
	}
	return s;
}

static void
keep(char *dst, const char *src)
{
	snprintf(dst, NAME_KEEP, "%s", src);
}

/* One line (trimmed, in start); returns 0 when it is an error. */
static int
one_line(char *line, char *start, char *section, char *prev, ph_ini_fn fn, void *user)
{
	char *end, *value;

	if (*start == '\0' || *start == ';' || *start == '#')
		return 1;
	if (prev[0] && start > line)
		return fn(user, section, prev, start); /* inline comments and all */
	if (*start == '[') {
		end = find_stop(start + 1, "]");
		if (*end != ']')
			return 0;
		*end = '\0';
		keep(section, start + 1);
		prev[0] = '\0';
		return 1;
	}
	end = find_stop(start, "=:");
	if (*end != '=' && *end != ':')
		return 0;
	*end = '\0';
	cut_space(start, end);
	value = end + 1;
	end = find_stop(value, NULL);
	*end = '\0';
	value = skip_space(value);
	cut_space(value, value + strlen(value));
	keep(prev, start);
	return fn(user, section, start, value);
}

int
ph_ini_parse(const char *path, ph_ini_fn fn, void *user)
{
	char line[LINE_MAX_READ], section[NAME_KEEP] = "", prev[NAME_KEEP] = "";
	int lineno = 0, error = 0;
	FILE *f = fopen(path, "r");

	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL) {
		char *start = line;

		lineno++;
		if (lineno == 1 && (unsigned char)line[0] == 0xef &&
		    (unsigned char)line[1] == 0xbb && (unsigned char)line[2] == 0xbf)
			start += 3;
		start = skip_space(start);
		cut_space(start, start + strlen(start));
		if (!one_line(line, start, section, prev, fn, user) && error == 0)
			error = lineno;
	}
	fclose(f);
	return error;
}
