/* Whole-content hashes of a file on either side; see whole.h. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <xxhash.h>

#include "ctx.h"
#include "job.h"
#include "lio.h"
#include "local.h"
#include "whole.h"

#define CHUNK (256u * 1024)   /* one READ; a server may answer less */
#define NCHUNK 4              /* READs in flight (ph_sftp_read_ranges_sync) */

int
ph_whole_local(struct ph_job *j, const char *rel, uint8_t out[16], uint64_t *size)
{
	const char *base;
	char *dir;
	int dfd, rc;

	if ((rc = ph_local_split(rel, &dir, &base)) != 0)
		return rc;
	rc = ph_local_opendir(j->lroot, dir, &dfd);
	free(dir);
	if (rc != 0)
		return rc;
	rc = ph_lio_hash_file(dfd, base, out, size);
	close(dfd);
	return rc ? ph_err_from_errno(-rc) : 0;
}

int
ph_whole_remote(struct ph_job *j, const char *rel, uint64_t size, uint8_t out[16])
{
	XXH3_state_t *hs = XXH3_createState();
	XXH128_canonical_t c;
	uint8_t *mem = malloc((size_t)NCHUNK * CHUNK), *buf[NCHUNK];
	uint64_t off[NCHUNK], pos = 0;
	uint32_t len[NCHUNK], got[NCHUNK];
	char *rp = ph_job_rpath(j, rel);
	int rc = 0, end = 0;
	size_t i, n;

	if (hs == NULL || mem == NULL || rp == NULL) {
		rc = PHSYNC_ENOMEM;
		goto out;
	}
	XXH3_128bits_reset(hs);
	for (i = 0; i < NCHUNK; i++)
		buf[i] = mem + i * CHUNK;
	/* In order: a short answer ends the round and the next one starts
	 * where it stopped; the last round asks past the end, which must
	 * answer EOF (a file longer than listed is not the one confirmed). */
	while (rc == 0 && !end && !j->ctx->interrupted) {
		for (n = 0; n < NCHUNK; n++) {
			off[n] = pos + (uint64_t)n * CHUNK;
			len[n] = CHUNK;
			got[n] = 0;
			if (off[n] >= size) {
				len[n] = 1; /* the EOF probe */
				n++;
				break;
			}
			if (size - off[n] < CHUNK)
				len[n] = (uint32_t)(size - off[n]);
		}
		if ((rc = ph_sftp_read_ranges_sync(j->sftp, rp, off, len, buf, got, n)) != 0)
			break;
		for (i = 0; i < n; i++) {
			if (off[i] >= size) {
				end = 1;
				if (got[i] != 0)
					rc = PHSYNC_ECORRUPT; /* longer than listed */
				break;
			}
			if (got[i] == 0) {
				rc = PHSYNC_ECORRUPT;     /* shorter */
				break;
			}
			XXH3_128bits_update(hs, buf[i], got[i]);
			pos += got[i];
			if (got[i] < len[i])
				break;                    /* a short answer: go on from pos */
		}
	}
	if (rc == 0 && j->ctx->interrupted)
		rc = PHSYNC_EINTR;
	if (rc == 0) {
		XXH128_canonicalFromHash(&c, XXH3_128bits_digest(hs));
		memcpy(out, c.digest, 16);
	}
out:
	free(rp);
	free(mem);
	XXH3_freeState(hs);
	return rc;
}
