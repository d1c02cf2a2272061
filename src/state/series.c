/* SPDX-License-Identifier: ISC */
/* A backup series in a pair's store (schema 4): the archives it made
 * (backup_archives) and what it holds as of its last one (backup_files),
 * advanced one archive at a time in one transaction. See series.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "platform.h"
#include "statedb.h"

int
ph_state_series_id(struct ph_state *st, char id[33])
{
	sqlite3_stmt *s = NULL;
	uint8_t r[16];
	int rc = 0, i, e;

	if (sqlite3_prepare_v2(st->db, "SELECT v FROM meta WHERE k = 'series'", -1, &s,
	                       NULL) != SQLITE_OK)
		return ph_statedb_err(st, "reading the series id");
	if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_bytes(s, 0) == 32) {
		memcpy(id, sqlite3_column_text(s, 0), 32);
		id[32] = '\0';
		sqlite3_finalize(s);
		return 0;
	}
	sqlite3_finalize(s);
	if ((e = ph_random(r, sizeof(r))) != 0)
		return ph_err(st->ctx, PHSYNC_EIO, "cannot draw a random series id: %s", strerror(-e));
	for (i = 0; i < 16; i++)
		snprintf(id + 2 * i, 3, "%02x", r[i]);
	if ((rc = ph_state_flush(st)) != 0 || (rc = ph_statedb_exec(st, "BEGIN IMMEDIATE")) != 0)
		return rc;
	if ((rc = ph_statedb_meta_put(st, "series", id)) != 0 ||
	    (rc = ph_statedb_exec(st, "COMMIT")) != 0)
		sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}

void
ph_state_backup_recs_free(struct ph_backup_rec *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(v[i].name);
	free(v);
}

int
ph_state_backup_list(struct ph_state *st, struct ph_backup_rec **out, size_t *n)
{
	sqlite3_stmt *s = NULL;
	struct ph_backup_rec *v = NULL;
	size_t cnt = 0;
	int r, rc = 0;

	*out = NULL;
	*n = 0;
	if (sqlite3_prepare_v2(st->db, "SELECT seq, name, kind, base, created, files, bytes, "
	                       "deleted, pruned FROM backup_archives ORDER BY seq", -1, &s,
	                       NULL) != SQLITE_OK)
		return ph_statedb_err(st, "reading the backup series");
	while ((r = sqlite3_step(s)) == SQLITE_ROW) {
		struct ph_backup_rec *nv = realloc(v, (cnt + 1) * sizeof(*v));
		const char *name = (const char *)sqlite3_column_text(s, 1);
		const char *kind = (const char *)sqlite3_column_text(s, 2);

		if (nv == NULL || (name != NULL && (nv[cnt].name = strdup(name)) == NULL)) {
			v = nv ? nv : v;
			rc = PHSYNC_ENOMEM;
			break;
		}
		v = nv;
		if (name == NULL || kind == NULL)
			continue;
		v[cnt].seq = sqlite3_column_int64(s, 0);
		v[cnt].full = strcmp(kind, "full") == 0;
		v[cnt].base = sqlite3_column_int64(s, 3);
		v[cnt].created = sqlite3_column_int64(s, 4);
		v[cnt].files = (uint64_t)sqlite3_column_int64(s, 5);
		v[cnt].bytes = (uint64_t)sqlite3_column_int64(s, 6);
		v[cnt].deleted = (uint64_t)sqlite3_column_int64(s, 7);
		v[cnt].pruned = sqlite3_column_int(s, 8);
		cnt++;
	}
	if (rc == 0 && r != SQLITE_DONE)
		rc = ph_statedb_err(st, "reading the backup series");
	sqlite3_finalize(s);
	*out = v;
	*n = cnt;
	return rc;
}

int
ph_state_backup_each(struct ph_state *st, ph_state_bfile_fn *fn, void *arg)
{
	sqlite3_stmt *s = NULL;
	char *path = NULL;
	size_t cap = 0;
	int rc = 0, r = SQLITE_DONE;

	if (sqlite3_prepare_v2(st->db, "SELECT k, type, size, mtime, nsec, mode, hash, seq FROM "
	                       "backup_files ORDER BY k", -1, &s, NULL) != SQLITE_OK)
		return ph_statedb_err(st, "reading the backup series");
	while (rc == 0 && (r = sqlite3_step(s)) == SQLITE_ROW) {
		struct ph_backup_file f;

		if ((rc = ph_statedb_row_path(s, &path, &cap)) <= 0)
			continue;   /* 0: a row to skip; < 0 ends the loop */
		f.type = sqlite3_column_int(s, 1);
		f.size = (uint64_t)sqlite3_column_int64(s, 2);
		f.mtime = sqlite3_column_int64(s, 3);
		f.nsec = (uint32_t)sqlite3_column_int64(s, 4);
		f.mode = (uint32_t)sqlite3_column_int64(s, 5);
		f.hash = sqlite3_column_bytes(s, 6) == 16 ? sqlite3_column_blob(s, 6) : NULL;
		f.seq = sqlite3_column_int64(s, 7);
		rc = fn(arg, path, &f);
	}
	if (rc == 0 && r != SQLITE_DONE)
		rc = ph_statedb_err(st, "reading the backup series");
	sqlite3_finalize(s);
	free(path);
	return rc;
}

int
ph_state_backup_begin(struct ph_state *st, int full)
{
	int rc;

	if ((rc = ph_state_flush(st)) != 0 || (rc = ph_statedb_exec(st, "BEGIN IMMEDIATE")) != 0)
		return rc;
	if (full && (rc = ph_statedb_exec(st, "DELETE FROM backup_files")) != 0)
		sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}

int
ph_state_backup_put(struct ph_state *st, const char *path, const struct ph_backup_file *f)
{
	sqlite3_stmt *s = NULL;
	int rc;

	rc = sqlite3_prepare_v2(st->db, "INSERT OR REPLACE INTO backup_files (k, type, size, mtime, "
	                        "nsec, mode, hash, seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", -1, &s,
	                        NULL) != SQLITE_OK ||
	     ph_statedb_bind_key(s, 1, path) != SQLITE_OK ||
	     sqlite3_bind_int(s, 2, f->type) != SQLITE_OK ||
	     sqlite3_bind_int64(s, 3, (int64_t)f->size) != SQLITE_OK ||
	     sqlite3_bind_int64(s, 4, f->mtime) != SQLITE_OK ||
	     sqlite3_bind_int64(s, 5, f->nsec) != SQLITE_OK ||
	     sqlite3_bind_int64(s, 6, f->mode) != SQLITE_OK ||
	     (f->hash ? sqlite3_bind_blob(s, 7, f->hash, 16, SQLITE_TRANSIENT) :
	                sqlite3_bind_null(s, 7)) != SQLITE_OK ||
	     sqlite3_bind_int64(s, 8, f->seq) != SQLITE_OK ||
	     sqlite3_step(s) != SQLITE_DONE;
	if (rc)
		rc = ph_statedb_err(st, "recording a backed-up file");
	sqlite3_finalize(s);
	return rc;
}

int
ph_state_backup_forget(struct ph_state *st, const char *path)
{
	sqlite3_stmt *s = NULL;
	int rc;

	rc = sqlite3_prepare_v2(st->db, "DELETE FROM backup_files WHERE k = ?", -1, &s,
	                        NULL) != SQLITE_OK ||
	     ph_statedb_bind_key(s, 1, path) != SQLITE_OK || sqlite3_step(s) != SQLITE_DONE;
	if (rc)
		rc = ph_statedb_err(st, "forgetting a backed-up file");
	sqlite3_finalize(s);
	return rc;
}

int
ph_state_backup_end(struct ph_state *st, const struct ph_backup_rec *rec)
{
	sqlite3_stmt *s = NULL;
	int rc;

	rc = sqlite3_prepare_v2(st->db, "INSERT INTO backup_archives (seq, name, kind, base, "
	                        "created, files, bytes, deleted) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
	                        -1, &s, NULL) != SQLITE_OK ||
	     sqlite3_bind_int64(s, 1, rec->seq) != SQLITE_OK ||
	     sqlite3_bind_text(s, 2, rec->name, -1, SQLITE_STATIC) != SQLITE_OK ||
	     sqlite3_bind_text(s, 3, rec->full ? "full" : "incremental", -1,
	                       SQLITE_STATIC) != SQLITE_OK ||
	     (rec->base ? sqlite3_bind_int64(s, 4, rec->base) :
	                  sqlite3_bind_null(s, 4)) != SQLITE_OK ||
	     sqlite3_bind_int64(s, 5, rec->created) != SQLITE_OK ||
	     sqlite3_bind_int64(s, 6, (int64_t)rec->files) != SQLITE_OK ||
	     sqlite3_bind_int64(s, 7, (int64_t)rec->bytes) != SQLITE_OK ||
	     sqlite3_bind_int64(s, 8, (int64_t)rec->deleted) != SQLITE_OK ||
	     sqlite3_step(s) != SQLITE_DONE;
	if (rc)
		rc = ph_statedb_err(st, "recording the archive");
	sqlite3_finalize(s);
	if (rc == 0)
		rc = ph_statedb_exec(st, "COMMIT");
	if (rc != 0)
		sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}

void
ph_state_backup_abort(struct ph_state *st)
{
	sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
}

int
ph_state_backup_pruned(struct ph_state *st, int64_t seq)
{
	char sql[96];

	snprintf(sql, sizeof(sql), "UPDATE backup_archives SET pruned = 1 WHERE seq = %lld",
	         (long long)seq);
	return ph_statedb_exec(st, sql);
}
