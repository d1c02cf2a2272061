/* SPDX-License-Identifier: ISC */
/* The delta engine alone, no file I/O in the timed part: reads BASIS and
 * NEW into memory, then times signature generation over BASIS and the
 * diff of NEW against it (CHUNK-byte input pieces, output discarded), and
 * prints the diff's counters. Best of REPS, in CPU seconds.
 *   cc -O2 -Iinclude bench/delta/engine_speed.c build-delta-rel/libphsync.a \
 *      $(pkg-config --libs libxxhash libssh) -o /tmp/engine_speed
 *   /tmp/engine_speed BASIS NEW [REPS [CHUNK]]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "phsync/delta.h"

static unsigned char *
slurp(const char *name, size_t *len)
{
	FILE *f = fopen(name, "rb");
	unsigned char *p;
	long n;

	if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0)
		exit(1);
	rewind(f);
	p = malloc((size_t)n + 1);
	if (p == NULL || fread(p, 1, (size_t)n, f) != (size_t)n)
		exit(1);
	fclose(f);
	*len = (size_t)n;
	return p;
}

static double
now(void)
{
	struct timespec ts;

	/* CPU time of this process: the machine is shared, so wall time
	 * would count other people's work. */
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static size_t
min_sz(size_t a, size_t b)
{
	return a < b ? a : b;
}

int
main(int argc, char **argv)
{
	size_t blen, nlen, chunk, siglen = 0, sigcap;
	unsigned char *basis, *nf, *sigbuf, *obuf;
	int reps;
	double best_sig = 1e9, best_diff = 1e9;
	struct phsync_diff_stats st;

	if (argc < 3)
		return 2;
	basis = slurp(argv[1], &blen);
	nf = slurp(argv[2], &nlen);
	reps = argc > 3 ? atoi(argv[3]) : 3;
	chunk = argc > 4 ? (size_t)atol(argv[4]) : 1u << 20;
	sigcap = 64 + blen / 16 * 12;
	sigbuf = malloc(sigcap);
	obuf = malloc(1u << 20);
	for (int r = 0; r < reps; r++) {
		phsync_sig_gen *g;
		struct phsync_in in = { basis, 0, 0 };
		struct phsync_out out = { sigbuf, sigcap, 0 };
		int done = 0;
		double t = now();

		if (phsync_sig_gen_new(NULL, blen, 0, 0, &g) < 0)
			return 1;
		while (!done) {
			in.size = min_sz(blen, in.pos + chunk);
			if (phsync_sig_gen_stream(g, &out, &in, in.size == blen, &done) < 0)
				return 1;
		}
		t = now() - t;
		best_sig = t < best_sig ? t : best_sig;
		siglen = out.pos;
		phsync_sig_gen_free(g);
	}
	for (int r = 0; r < reps; r++) {
		phsync_sig *sig;
		phsync_diff *d;
		struct phsync_in sin = { sigbuf, siglen, 0 };
		struct phsync_in in = { nf, 0, 0 };
		int done = 0;
		double t;

		if (phsync_sig_new(NULL, &sig) < 0 || phsync_sig_load(sig, &sin, 1) < 0 ||
		    phsync_diff_new(NULL, sig, &d) < 0)
			return 1;
		t = now();
		while (!done) {
			struct phsync_out out = { obuf, 1u << 20, 0 };

			if (in.pos == in.size)
				in.size = min_sz(nlen, in.pos + chunk);
			if (phsync_diff_stream(d, &out, &in, in.size == nlen, &done) < 0)
				return 1;
		}
		t = now() - t;
		best_diff = t < best_diff ? t : best_diff;
		phsync_diff_get_stats(d, &st);
		phsync_diff_free(d);
		phsync_sig_free(sig);
	}
	printf("signature %.3f s %.2f GB/s; diff %.3f s %.2f GB/s (CPU, best of %d)\n", best_sig,
	       blen / best_sig / 1e9, best_diff, nlen / best_diff / 1e9, reps);
	printf("diff: copy %llu literal %llu ops %llu fast %llu filter_hits %llu strong %llu "
	       "misses %llu\n",
	       (unsigned long long)st.copy_bytes, (unsigned long long)st.literal_bytes,
	       (unsigned long long)st.ops, (unsigned long long)st.fast_hits,
	       (unsigned long long)st.filter_hits, (unsigned long long)st.strong_calls,
	       (unsigned long long)st.strong_misses);
	return 0;
}
