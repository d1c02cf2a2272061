/* SPDX-License-Identifier: ISC */
/* ph_agent_pick(): one request of the ssh-agent protocol
 * (draft-miller-ssh-agent: SSH_AGENTC_REQUEST_IDENTITIES, 11, answered by
 * SSH_AGENT_IDENTITIES_ANSWER, 12), read with a cap on every length. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "psys.h"

#define AGENT_MS 5000             /* an agent answers at once or not at all */
#define MAX_ANSWER (256u << 10)   /* the whole identities answer */
#define MAX_KEYS 1024u
#define MAX_BLOB (16u << 10)      /* an RSA 16384 key is about 2 KiB */

static uint32_t
get_u32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* A string of the answer at *off (u32 length, bytes), within len and cap.
 * Returns 0 and moves *off past it, or -1. */
static int
get_string(const unsigned char *buf, size_t len, size_t *off, size_t cap,
           const unsigned char **s, size_t *slen)
{
	uint32_t n;

	if (len - *off < 4)
		return -1;
	n = get_u32(buf + *off);
	if (n > cap || n > len - *off - 4)
		return -1;
	*s = buf + *off + 4;
	*slen = n;
	*off += 4 + (size_t)n;
	return 0;
}

/* Lower is better; -1: not a key phsync pairs with. */
static int
rank(const unsigned char *type, size_t len)
{
	static const char *const types[] = { "ssh-ed25519", "ecdsa-sha2-nistp256",
		"ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521", "ssh-rsa" };
	static const int ranks[] = { 0, 1, 1, 1, 2 };
	size_t i;

	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (strlen(types[i]) == len && memcmp(types[i], type, len) == 0)
			return ranks[i];
	return -1;
}

static size_t
base64(const unsigned char *in, size_t len, char *out, size_t outlen)
{
	static const char tab[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t i, o = 0;

	if (outlen < (len + 2) / 3 * 4 + 1)
		return 0;
	for (i = 0; i + 2 < len; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];

		out[o++] = tab[v >> 18];
		out[o++] = tab[(v >> 12) & 63];
		out[o++] = tab[(v >> 6) & 63];
		out[o++] = tab[v & 63];
	}
	if (i < len) {
		uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < len ? (uint32_t)in[i + 1] << 8 : 0);

		out[o++] = tab[v >> 18];
		out[o++] = tab[(v >> 12) & 63];
		out[o++] = i + 1 < len ? tab[(v >> 6) & 63] : '=';
		out[o++] = '=';
	}
	out[o] = '\0';
	return o;
}

int
ph_agent_pick(char *pub, size_t publen)
{
	static const unsigned char req[5] = { 0, 0, 0, 1, 11 };
	struct ph_agent_conn *conn = NULL;
	unsigned char hdr[4], *buf = NULL;
	const unsigned char *blob, *comment, *best_blob = NULL, *best_comment = NULL;
	size_t len, off, blen, clen, best_blen = 0, best_clen = 0;
	uint32_t nkeys, k;
	int rc = -1, best = -1;

	if (ph_agent_open(&conn) != 0)
		return -1;
	if (ph_agent_io(conn, (void *)req, sizeof(req), 1, AGENT_MS) != 0 ||
	    ph_agent_io(conn, hdr, 4, 0, AGENT_MS) != 0)
		goto out;
	len = get_u32(hdr);
	if (len < 5 || len > MAX_ANSWER || (buf = malloc(len)) == NULL ||
	    ph_agent_io(conn, buf, len, 0, AGENT_MS) != 0 || buf[0] != 12)
		goto out;
	nkeys = get_u32(buf + 1);
	if (nkeys > MAX_KEYS)
		goto out;
	off = 5;
	for (k = 0; k < nkeys; k++) {
		const unsigned char *type;
		size_t tlen, boff = 0;
		int r;

		if (get_string(buf, len, &off, MAX_BLOB, &blob, &blen) != 0 ||
		    get_string(buf, len, &off, len, &comment, &clen) != 0)
			goto out;
		if (get_string(blob, blen, &boff, blen, &type, &tlen) != 0)
			continue;
		r = rank(type, tlen);
		if (r >= 0 && (best < 0 || r < best)) {
			best = r;
			best_blob = blob;
			best_blen = blen;
			best_comment = comment;
			best_clen = clen;
		}
	}
	if (best >= 0) {
		size_t tlen, boff = 0, o;
		const unsigned char *type;
		char c;

		/* It parsed in the loop above: the same bytes parse again. */
		if (get_string(best_blob, best_blen, &boff, best_blen, &type, &tlen) != 0 ||
		    tlen + 2 >= publen)
			goto out;
		memcpy(pub, type, tlen);
		pub[tlen] = ' ';
		o = tlen + 1;
		if ((k = (uint32_t)base64(best_blob, best_blen, pub + o, publen - o)) == 0)
			goto out;
		o += k;
		/* The comment, printable ASCII only (it ends up in authorized_keys). */
		if (o + 1 < publen && best_clen > 0)
			pub[o++] = ' ';
		for (k = 0; k < best_clen && o + 1 < publen; k++) {
			c = (char)best_comment[k];
			pub[o++] = c > ' ' && c < 0x7f ? c : '_';
		}
		pub[o] = '\0';
		rc = 0;
	}
out:
	free(buf);
	ph_agent_close(conn);
	return rc;
}
