/* SPDX-License-Identifier: ISC */
/* Check-file deltas (cfdelta.h). The server's digests cover the new
 * file's blocks on a fixed grid; no rolling sum comes with them, so the
 * old copy cannot be searched at every offset as the delta engine does.
 * It is hashed where the edits of a photo leave each block: where it was,
 * moved by the size change, or moved as a few short samples of the new
 * file (read with the digests, 64 bytes each) are found in the old copy:
 * an EXIF block that grew shifts the rest by its growth, which is not the
 * size change when a tail was appended too.
 * Every block taken from the old copy matched the server's digest of
 * that very block; the rest is read as in a plain pull, and the usual
 * end checks (every byte covered, the end at the listed size) apply. */
#include <stdlib.h>
#include <string.h>

#include "phsync/error.h"
#include "ph_config.h"
#include "cfdelta.h"
#include "pfs.h"

#ifdef PHSYNC_HAVE_LIBCRYPTO
#include <openssl/evp.h>
#endif

#define CF_MIN_BLOCK 4096u
#define CF_MAX_BLOCKS 4096u  /* larger files get larger blocks: a reply of at
                                most 80 KiB */
#define CF_MAX_DLEN 20u
#define CF_SAMPLES 8u
#define CF_SAMPLE_LEN 64u
#define CF_HITS 4u           /* places per sample tried (repeated bytes) */
#define CF_SHIFTS 16u        /* distinct shifts tried per block, at most */

struct ph_cf {
	uint64_t size;       /* the new file's */
	uint32_t block;
	uint32_t n;          /* blocks */
	int got;             /* the reply came */
	uint32_t dlen;       /* digest length, from the reply */
	char alg[8];
	uint8_t *digests;    /* n * CF_MAX_DLEN */
	int64_t *src;        /* per block: offset in the old copy, or -1 */
	uint32_t nsamples;
	uint8_t sample[CF_SAMPLES][CF_SAMPLE_LEN];
	uint8_t have_sample[CF_SAMPLES];
};

static uint32_t
dlen_of(const uint8_t *alg, uint32_t len)
{
	if (len == 3 && memcmp(alg, "md5", 3) == 0)
		return 16;
	if (len == 4 && memcmp(alg, "sha1", 4) == 0)
		return 20;
	return 0;
}

int
ph_cf_available(void)
{
#ifdef PHSYNC_HAVE_LIBCRYPTO
	return 1;
#else
	return 0;
#endif
}

int
ph_cf_new(uint64_t new_size, struct ph_cf **out)
{
	struct ph_cf *cf;
	uint32_t b = CF_MIN_BLOCK, k;

	*out = NULL;
	if (new_size == 0)
		return PHSYNC_EINVAL;
	while ((new_size + b - 1) / b > CF_MAX_BLOCKS && b < (1u << 30))
		b <<= 1;
	if ((cf = calloc(1, sizeof(*cf))) == NULL)
		return PHSYNC_ENOMEM;
	cf->size = new_size;
	cf->block = b;
	cf->n = (uint32_t)((new_size + b - 1) / b);
	/* Samples start blocks 1.. spread over the file, each whole inside it. */
	while (cf->nsamples < CF_SAMPLES && cf->nsamples + 1 < cf->n &&
	       (uint64_t)(1 + cf->nsamples * (cf->n - 1) / CF_SAMPLES) * b + CF_SAMPLE_LEN <= new_size)
		cf->nsamples++;
	cf->digests = malloc((size_t)cf->n * CF_MAX_DLEN);
	cf->src = malloc((size_t)cf->n * sizeof(*cf->src));
	if (cf->digests == NULL || cf->src == NULL) {
		ph_cf_free(cf);
		return PHSYNC_ENOMEM;
	}
	for (k = 0; k < cf->n; k++)
		cf->src[k] = -1;
	*out = cf;
	return 0;
}

void
ph_cf_free(struct ph_cf *cf)
{
	if (cf == NULL)
		return;
	free(cf->digests);
	free(cf->src);
	free(cf);
}

void
ph_cf_request(const struct ph_cf *cf, uint64_t *len, uint32_t *block)
{
	*len = (uint64_t)cf->n * cf->block;
	*block = cf->block;
}

uint32_t
ph_cf_samples(const struct ph_cf *cf, uint32_t *len)
{
	*len = CF_SAMPLE_LEN;
	return cf->nsamples;
}

uint64_t
ph_cf_sample_off(const struct ph_cf *cf, uint32_t i)
{
	return (uint64_t)(1 + i * (cf->n - 1) / CF_SAMPLES) * cf->block;
}

void
ph_cf_sample_take(struct ph_cf *cf, uint32_t i, const uint8_t *data, uint32_t len)
{
	if (i < cf->nsamples && len == CF_SAMPLE_LEN) {
		memcpy(cf->sample[i], data, len);
		cf->have_sample[i] = 1;
	}
}

int
ph_cf_take(struct ph_cf *cf, const struct ph_sftp_reply *r)
{
	const uint8_t *alg;
	uint32_t alglen;

	if (cf->got || ph_sftp_check_file_parse(r, &alg, &alglen, dlen_of, cf->n,
	                                        cf->digests) != 0)
		return PHSYNC_EPROTO;
	cf->dlen = dlen_of(alg, alglen);
	memcpy(cf->alg, alg, alglen);
	cf->alg[alglen] = '\0';
	cf->got = 1;
	return 0;
}

#ifdef PHSYNC_HAVE_LIBCRYPTO
/* Does the old copy hold block k at o? */
static int
held_at(const struct ph_cf *cf, const EVP_MD *md, int fd, uint64_t old_size, uint32_t k,
        int64_t o, uint8_t *buf, size_t bufsz)
{
	uint64_t noff = (uint64_t)k * cf->block;
	size_t len = cf->size - noff < cf->block ? (size_t)(cf->size - noff) : cf->block;
	unsigned char d[EVP_MAX_MD_SIZE];
	unsigned int dl = 0;
	size_t have = 0;

	if (o < 0 || (uint64_t)o + len > old_size || len > bufsz)
		return 0;
	while (have < len) {
		int64_t n = ph_pread(fd, buf + have, len - have, (uint64_t)o + have);

		if (n <= 0)
			return 0;
		have += (size_t)n;
	}
	if (EVP_Digest(buf, len, d, &dl, md, NULL) != 1 || dl != cf->dlen)
		return 0;
	return memcmp(d, cf->digests + (size_t)k * cf->dlen, dl) == 0;
}

static size_t
add_shift(int64_t *v, size_t n, int64_t sh)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (v[i] == sh)
			return n;
	if (n < CF_SHIFTS)
		v[n++] = sh;
	return n;
}

/* Shifts at which the samples lie in the old copy (a sample of few
 * distinct bytes, as in a run of zeros, says nothing and is skipped). */
static size_t
sample_shifts(const struct ph_cf *cf, int fd, uint64_t old_size, uint8_t *buf, size_t bufsz,
              int64_t *v, size_t n)
{
	uint32_t hits[CF_SAMPLES] = { 0 };
	int usable[CF_SAMPLES] = { 0 };
	uint64_t pos = 0;
	uint32_t i;

	for (i = 0; i < cf->nsamples; i++) {
		uint8_t seen[256] = { 0 };
		unsigned distinct = 0, b;

		for (b = 0; cf->have_sample[i] && b < CF_SAMPLE_LEN; b++)
			distinct += !seen[cf->sample[i][b]]++;
		usable[i] = distinct >= 16;
	}
	while (pos < old_size && bufsz > CF_SAMPLE_LEN) {
		size_t want = old_size - pos < bufsz ? (size_t)(old_size - pos) : bufsz, got = 0;

		while (got < want) {
			int64_t r = ph_pread(fd, buf + got, want - got, pos + got);

			if (r <= 0)
				return n;
			got += (size_t)r;
		}
		for (i = 0; i < cf->nsamples; i++) {
			const uint8_t *at = buf, *end = buf + got;

			while (usable[i] && hits[i] < CF_HITS && at < end &&
			       (at = memmem(at, (size_t)(end - at), cf->sample[i], CF_SAMPLE_LEN)) != NULL) {
				n = add_shift(v, n, (int64_t)ph_cf_sample_off(cf, i) -
				                    (int64_t)(pos + (uint64_t)(at - buf)));
				hits[i]++;
				at++;
			}
		}
		if (pos + got >= old_size)
			break;
		pos += got - (CF_SAMPLE_LEN - 1);   /* a sample across the seam */
	}
	return n;
}
#endif

uint64_t
ph_cf_match(struct ph_cf *cf, int fd, uint64_t old_size, uint8_t *buf, size_t bufsz)
{
	uint64_t matched = 0;
	uint32_t k;

	for (k = 0; k < cf->n; k++)
		cf->src[k] = -1;
#ifdef PHSYNC_HAVE_LIBCRYPTO
	{
		const EVP_MD *md = EVP_get_digestbyname(cf->alg);
		int64_t shift[CF_SHIFTS];
		size_t ns = 0, first = 0;

		if (md == NULL || !cf->got)
			return 0;
		ns = add_shift(shift, ns, 0);
		ns = add_shift(shift, ns, (int64_t)cf->size - (int64_t)old_size);
		ns = sample_shifts(cf, fd, old_size, buf, bufsz, shift, ns);
		for (k = 0; k < cf->n; k++) {
			int64_t noff = (int64_t)k * cf->block;
			size_t t;

			/* The shift that matched last is tried first: a run of
			 * blocks moves together. */
			for (t = 0; t < ns; t++) {
				size_t si = (first + t) % ns;

				if (held_at(cf, md, fd, old_size, k, noff - shift[si], buf,
				            bufsz)) {
					cf->src[k] = noff - shift[si];
					first = si;
					matched += cf->size - (uint64_t)noff < cf->block ?
					           cf->size - (uint64_t)noff : cf->block;
					break;
				}
			}
		}
	}
#else
	(void)fd;
	(void)old_size;
	(void)buf;
	(void)bufsz;
#endif
	return matched;
}

void
ph_cf_at(const struct ph_cf *cf, uint64_t off, int64_t *src, uint64_t *run)
{
	uint32_t k = (uint32_t)(off / cf->block), j;
	uint64_t in = off - (uint64_t)k * cf->block, end;

	if (cf->src[k] < 0) {
		for (j = k + 1; j < cf->n && cf->src[j] < 0; j++)
			;
		*src = -1;
	} else {
		for (j = k + 1; j < cf->n && cf->src[j] == cf->src[j - 1] + (int64_t)cf->block; j++)
			;
		*src = cf->src[k] + (int64_t)in;
	}
	end = (uint64_t)j * cf->block;
	if (end > cf->size)
		end = cf->size;
	*run = end - off;
}
