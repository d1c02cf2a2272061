/* SPDX-License-Identifier: ISC */
/* The sync records of a pair's store: the files table (each file a run
 * left in place) and the partial transfers, written in batched
 * transactions. See records.h; state.c opens the store. */
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "buf.h"
#include "statedb.h"

#define BATCH 512             /* rows per transaction */

int
ph_statedb_records_prepare(struct ph_state *st)
{
	int rc;

	if ((rc = sqlite3_prepare_v2(st->db, "INSERT OR REPLACE INTO files (k, lsize, lmtime, "
	                             "rsize, rmtime, hash, sig, hread, lctime, lino, ldev, lrun) "
	                             "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", -1, &st->put,
	                             NULL)) != SQLITE_OK ||
	    (rc = sqlite3_prepare_v2(st->db, "SELECT lsize, lmtime, rsize, rmtime, hash, sig, "
	                             "hread FROM files WHERE k = ?", -1, &st->get,
	                             NULL)) != SQLITE_OK)
		return rc;
	return sqlite3_prepare_v2(st->db, "DELETE FROM files WHERE k = ?", -1, &st->del, NULL);
}

void
ph_statedb_records_finalize(struct ph_state *st)
{
	sqlite3_finalize(st->put);
	sqlite3_finalize(st->get);
	sqlite3_finalize(st->del);
	st->put = st->get = st->del = NULL;
}

/* Opens the batch's transaction if none is open. */
static int
batch_begin(struct ph_state *st)
{
	if (st->in_txn)
		return 0;
	if (sqlite3_exec(st->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
		return ph_statedb_err(st, "starting a transaction");
	st->in_txn = 1;
	return 0;
}

/* Steps a bound row statement, resets it, and commits every BATCH rows. */
static int
batch_step(struct ph_state *st, sqlite3_stmt *s, const char *what, int rc)
{
	if (rc == 0 && sqlite3_step(s) != SQLITE_DONE)
		rc = 1;
	if (rc != 0)
		rc = ph_statedb_err(st, what);
	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	if (rc == 0 && ++st->pending >= BATCH)
		rc = ph_state_flush(st);
	return rc;
}

int
ph_state_file_done(struct ph_state *st, const char *path, const struct ph_state_file *f)
{
	int rc;

	if (st->readonly)
		return 0;
	if ((rc = batch_begin(st)) != 0)
		return rc;
	sqlite3_reset(st->put);
	rc = ph_statedb_bind_key(st->put, 1, path) != SQLITE_OK ||
	     sqlite3_bind_int64(st->put, 2, (int64_t)f->lsize) != SQLITE_OK ||
	     sqlite3_bind_int64(st->put, 3, f->lmtime) != SQLITE_OK ||
	     sqlite3_bind_int64(st->put, 4, (int64_t)f->rsize) != SQLITE_OK ||
	     sqlite3_bind_int64(st->put, 5, f->rmtime) != SQLITE_OK ||
	     (f->hash ? sqlite3_bind_blob(st->put, 6, f->hash, 16, SQLITE_STATIC) :
	                sqlite3_bind_null(st->put, 6)) != SQLITE_OK ||
	     (f->sig ? sqlite3_bind_blob64(st->put, 7, f->sig, f->siglen, SQLITE_STATIC) :
	               sqlite3_bind_null(st->put, 7)) != SQLITE_OK ||
	     sqlite3_bind_int(st->put, 8, f->hash != NULL && f->hread) != SQLITE_OK;
	if (rc == 0 && f->has_lid)
		rc = sqlite3_bind_int64(st->put, 9, f->lctime) != SQLITE_OK ||
		     sqlite3_bind_int64(st->put, 10, (int64_t)f->lino) != SQLITE_OK ||
		     sqlite3_bind_int64(st->put, 11, (int64_t)f->ldev) != SQLITE_OK ||
		     sqlite3_bind_int64(st->put, 12, st->run_id) != SQLITE_OK;
	return batch_step(st, st->put, "recording a file", rc);
}

int
ph_state_file_forget(struct ph_state *st, const char *path)
{
	int rc;

	if (st->readonly)
		return 0;
	if ((rc = batch_begin(st)) != 0)
		return rc;
	sqlite3_reset(st->del);
	rc = ph_statedb_bind_key(st->del, 1, path) != SQLITE_OK;
	return batch_step(st, st->del, "forgetting a file", rc);
}

int
ph_state_partial_put(struct ph_state *st, const char *path, const struct ph_partial *pa)
{
	sqlite3_stmt *s = NULL;
	int rc;

	if (st->readonly)
		return 0;
	if ((rc = batch_begin(st)) != 0)
		return rc;
	rc = sqlite3_prepare_v2(st->db, "INSERT OR REPLACE INTO partial (path, tmp, size, mtime, "
	                        "have) VALUES (?, ?, ?, ?, ?)", -1, &s, NULL) != SQLITE_OK ||
	     sqlite3_bind_text(s, 1, path, -1, SQLITE_STATIC) != SQLITE_OK ||
	     sqlite3_bind_text(s, 2, pa->tmp, -1, SQLITE_STATIC) != SQLITE_OK ||
	     sqlite3_bind_int64(s, 3, (int64_t)pa->size) != SQLITE_OK ||
	     sqlite3_bind_int64(s, 4, pa->mtime) != SQLITE_OK ||
	     sqlite3_bind_int64(s, 5, (int64_t)pa->have) != SQLITE_OK;
	rc = batch_step(st, s, "recording a partial file", rc);
	sqlite3_finalize(s);
	return rc;
}

int
ph_state_partial_drop(struct ph_state *st, const char *path)
{
	sqlite3_stmt *s = NULL;
	int rc;

	if (st->readonly)
		return 0;
	if ((rc = batch_begin(st)) != 0)
		return rc;
	rc = sqlite3_prepare_v2(st->db, "DELETE FROM partial WHERE path = ?", -1, &s,
	                        NULL) != SQLITE_OK ||
	     sqlite3_bind_text(s, 1, path, -1, SQLITE_STATIC) != SQLITE_OK;
	rc = batch_step(st, s, "forgetting a partial file", rc);
	sqlite3_finalize(s);
	return rc;
}

int
ph_state_partial_load(struct ph_state *st, struct ph_partial **out, size_t *n)
{
	sqlite3_stmt *s = NULL;
	struct ph_partial *v = NULL;
	size_t cnt = 0;
	int r, rc = 0;

	*out = NULL;
	*n = 0;
	if (sqlite3_prepare_v2(st->db, "SELECT path, tmp, size, mtime, have FROM partial", -1, &s,
	                       NULL) != SQLITE_OK)
		return st->readonly ? 0 : ph_statedb_err(st, "reading partial files"); /* schema 1 */
	while ((r = sqlite3_step(s)) == SQLITE_ROW) {
		struct ph_partial *nv = realloc(v, (cnt + 1) * sizeof(*v));
		const char *p = (const char *)sqlite3_column_text(s, 0);
		const char *t = (const char *)sqlite3_column_text(s, 1);

		if (nv == NULL) {
			rc = PHSYNC_ENOMEM;
			break;
		}
		v = nv;
		if (p == NULL || t == NULL)
			continue;
		v[cnt].path = strdup(p);
		v[cnt].tmp = strdup(t);
		v[cnt].size = (uint64_t)sqlite3_column_int64(s, 2);
		v[cnt].mtime = sqlite3_column_int64(s, 3);
		v[cnt].have = (uint64_t)sqlite3_column_int64(s, 4);
		v[cnt].ready = 0;
		if (v[cnt].path == NULL || v[cnt].tmp == NULL) {
			free(v[cnt].path);
			free(v[cnt].tmp);
			rc = PHSYNC_ENOMEM;
			break;
		}
		cnt++;
	}
	if (rc == 0 && r != SQLITE_DONE && r != SQLITE_ROW)
		rc = ph_statedb_err(st, "reading partial files");
	sqlite3_finalize(s);
	*out = v;
	*n = cnt;
	return rc;
}

void
ph_state_partials_free(struct ph_partial *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(v[i].path);
		free(v[i].tmp);
	}
	free(v);
}

int
ph_state_file_get(struct ph_state *st, const char *path, struct ph_state_file *f,
                  uint8_t hashbuf[16])
{
	return ph_state_file_get_sig(st, path, f, hashbuf, NULL);
}

int
ph_state_file_get_sig(struct ph_state *st, const char *path, struct ph_state_file *f,
                      uint8_t hashbuf[16], uint8_t **sig)
{
	int rc;

	if (sig != NULL)
		*sig = NULL;

	if (st->get == NULL)
		return 0;   /* read-only: no statements (nothing looked up) */
	sqlite3_reset(st->get);
	if (ph_statedb_bind_key(st->get, 1, path) != SQLITE_OK)
		return ph_statedb_err(st, "looking a file up");
	rc = sqlite3_step(st->get);
	if (rc == SQLITE_DONE) {
		sqlite3_reset(st->get);
		return 0;
	}
	if (rc != SQLITE_ROW) {
		rc = ph_statedb_err(st, "looking a file up");
		sqlite3_reset(st->get);
		return rc;
	}
	f->lsize = (uint64_t)sqlite3_column_int64(st->get, 0);
	f->lmtime = sqlite3_column_int64(st->get, 1);
	f->rsize = (uint64_t)sqlite3_column_int64(st->get, 2);
	f->rmtime = sqlite3_column_int64(st->get, 3);
	f->hash = NULL;
	f->sig = NULL;
	f->siglen = 0;
	f->hread = sqlite3_column_int(st->get, 6) == 1;
	f->has_lid = 0;
	f->has_hash = sqlite3_column_bytes(st->get, 4) == 16;
	f->lctime = f->lref = 0;
	f->lino = f->ldev = 0;
	if (sqlite3_column_bytes(st->get, 4) == 16) {
		memcpy(hashbuf, sqlite3_column_blob(st->get, 4), 16);
		f->hash = hashbuf;
	}
	if (sig != NULL && sqlite3_column_bytes(st->get, 5) > 0) {
		size_t n = (size_t)sqlite3_column_bytes(st->get, 5);

		if ((*sig = malloc(n)) != NULL) {
			memcpy(*sig, sqlite3_column_blob(st->get, 5), n);
			f->sig = *sig;
			f->siglen = n;
		}
	}
	sqlite3_reset(st->get);
	return 1;
}

/* The runs table (about 100 rows: state.c keeps the last 100), read once
 * so that each record's lref is found here, not by two subqueries per row
 * (a million of them in a no-change run over a million files). */
struct run_ends {
	struct { int64_t id, ended; int has_ended; } *v;
	size_t n;
	int64_t min_started;
	int has_min;
};

static int
run_ends_load(struct ph_state *st, struct run_ends *re)
{
	sqlite3_stmt *s = NULL;
	size_t cap = 0;
	int r;

	memset(re, 0, sizeof(*re));
	if (sqlite3_prepare_v2(st->db, "SELECT id, started, ended FROM runs ORDER BY id", -1, &s,
	                       NULL) != SQLITE_OK)
		return ph_statedb_err(st, "reading");
	while ((r = sqlite3_step(s)) == SQLITE_ROW) {
		int64_t started = sqlite3_column_int64(s, 1);

		if (re->n == cap && ph_grow(&re->v, &cap, sizeof(*re->v), 128) != 0) {
			sqlite3_finalize(s);
			return PHSYNC_ENOMEM;
		}
		re->v[re->n].id = sqlite3_column_int64(s, 0);
		re->v[re->n].has_ended = sqlite3_column_type(s, 2) == SQLITE_INTEGER;
		re->v[re->n].ended = sqlite3_column_int64(s, 2);
		re->n++;
		if (sqlite3_column_type(s, 1) != SQLITE_NULL && (!re->has_min || started < re->min_started)) {
			re->min_started = started;
			re->has_min = 1;
		}
	}
	sqlite3_finalize(s);
	return r == SQLITE_DONE ? 0 : ph_statedb_err(st, "reading");
}

/* The end (ns) of the run lrun that recorded an identity; a run trimmed
 * from runs: the oldest kept one's start; 0 when unknown. */
static int64_t
run_ends_ref(const struct run_ends *re, int64_t lrun)
{
	size_t lo = 0, hi = re->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (re->v[mid].id == lrun)
			return re->v[mid].has_ended ? re->v[mid].ended * 1000000000 : 0;
		if (re->v[mid].id < lrun)
			lo = mid + 1;
		else
			hi = mid;
	}
	return re->has_min ? re->min_started * 1000000000 : 0;
}

int
ph_state_each(struct ph_state *st, ph_state_each_fn *fn, void *arg)
{
	sqlite3_stmt *s = NULL;
	struct run_ends re = { 0 };
	char *path = NULL;
	size_t cap = 0;
	int rc = 0, r;

	if ((rc = ph_state_flush(st)) != 0)
		return rc;
	/* lref: the end of the run that recorded the identity; a run trimmed
	 * from runs ended before the oldest kept one started. */
	if (!st->legacy && !st->nolid && (rc = run_ends_load(st, &re)) != 0)
		return rc;
	if (sqlite3_prepare_v2(st->db, st->legacy ?
	                       "SELECT replace(path, '/', char(1)) AS key, lsize, lmtime, rsize, "
	                       "rmtime FROM files ORDER BY key" : st->nolid ?
	                       "SELECT k, lsize, lmtime, rsize, rmtime FROM files ORDER BY k" :
	                       "SELECT k, lsize, lmtime, rsize, rmtime, lctime, lino, ldev, lrun, "
	                       "length(hash) = 16 FROM files ORDER BY k",
	                       -1, &s, NULL) != SQLITE_OK) {
		free(re.v);
		return ph_statedb_err(st, "reading");
	}
	while (rc == 0 && (r = sqlite3_step(s)) == SQLITE_ROW) {
		struct ph_state_file f;

		if ((rc = ph_statedb_row_path(s, &path, &cap)) <= 0)
			continue;   /* 0: a row to skip; < 0 ends the loop */
		memset(&f, 0, sizeof(f));
		f.lsize = (uint64_t)sqlite3_column_int64(s, 1);
		f.lmtime = sqlite3_column_int64(s, 2);
		f.rsize = (uint64_t)sqlite3_column_int64(s, 3);
		f.rmtime = sqlite3_column_int64(s, 4);
		f.has_hash = sqlite3_column_count(s) > 9 && sqlite3_column_int(s, 9) == 1;
		if (sqlite3_column_count(s) > 5 && sqlite3_column_type(s, 5) == SQLITE_INTEGER &&
		    sqlite3_column_type(s, 6) == SQLITE_INTEGER &&
		    sqlite3_column_type(s, 7) == SQLITE_INTEGER) {
			f.has_lid = 1;
			f.lctime = sqlite3_column_int64(s, 5);
			f.lino = (uint64_t)sqlite3_column_int64(s, 6);
			f.ldev = (uint64_t)sqlite3_column_int64(s, 7);
			/* runs keeps seconds */
			f.lref = sqlite3_column_type(s, 8) == SQLITE_INTEGER ?
			         run_ends_ref(&re, sqlite3_column_int64(s, 8)) : 0;
		}
		rc = fn(arg, path, &f);
	}
	if (rc == 0 && r != SQLITE_DONE)
		rc = ph_statedb_err(st, "reading");
	sqlite3_finalize(s);
	free(path);
	free(re.v);
	return rc;
}
