/* SPDX-License-Identifier: ISC */
/* libFuzzer: an archive's manifest (src/backup/manifest.c) as a stranger's
 * archive carries it. ph_mf_parse must refuse or accept without reading
 * past the buffer; ph_mf_check must give a reason when it refuses; and
 * what was accepted must format back into text that parses to the same
 * manifest (one form per line, so nothing is read two ways). Seeds:
 * fuzz/corpus/fuzz_manifest/ (a head, a full and an incremental manifest
 * written by phsync backup). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "manifest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int
same(const struct ph_manifest *a, const struct ph_manifest *b)
{
	size_t i;

	if (strcmp(a->series, b->series) != 0 || a->seq != b->seq || a->full != b->full ||
	    a->base != b->base || a->created != b->created ||
	    strcmp(a->source ? a->source : "", b->source ? b->source : "") != 0)
		return 0;
	if (a->head)
		return b->head && b->n == 0 && b->ndel == 0;
	if (b->head || a->n != b->n || a->ndel != b->ndel)
		return 0;
	for (i = 0; i < a->n; i++) {
		const struct ph_mf_file *x = &a->v[i], *y = &b->v[i];

		if (strcmp(x->path, y->path) != 0 || x->dir != y->dir || x->mtime != y->mtime ||
		    x->nsec != y->nsec || x->mode != y->mode ||
		    (!x->dir && (x->size != y->size || memcmp(x->hash, y->hash, 16) != 0)))
			return 0;
	}
	for (i = 0; i < a->ndel; i++)
		if (strcmp(a->del[i], b->del[i]) != 0)
			return 0;
	return 1;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ph_manifest m, m2;
	char why[400], *buf, *out = NULL;
	size_t len = 0;

	/* An exact-size copy, so ASan sees any read past the text. */
	if ((buf = malloc(size ? size : 1)) == NULL)
		return 0;
	memcpy(buf, data, size);
	if (ph_mf_parse(buf, size, &m) != 0) {
		free(buf);
		return 0;
	}
	free(buf);
	why[0] = '\0';
	if (ph_mf_check(&m, why, sizeof(why)) != 0 && (why[0] == '\0' || !memchr(why, 0, sizeof(why))))
		abort(); /* refused without a reason */
	if (ph_mf_format(&m, m.head, &out, &len) == 0) {
		if (ph_mf_parse(out, len, &m2) != 0)
			abort(); /* what it wrote, it cannot read */
		if (!same(&m, &m2))
			abort(); /* read back as another manifest */
		ph_mf_free(&m2);
		free(out);
	}
	ph_mf_free(&m);
	return 0;
}
