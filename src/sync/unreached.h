/* SPDX-License-Identifier: ISC */
/* Files a cut run never got to (issue 22, item 12). A run ended by
 * --timeout, a lost link, a signal or a fatal error used to say only what
 * was copied and what failed ("310 of 415 copied ... 0 failed"): the files
 * it never reached went unsaid. Every file event marks its file reached;
 * after a cut run, each file the plan meant to copy and no event named is
 * counted (stats.files_unreached) and named (PHSYNC_EV_NOT_REACHED).
 * Internal. */
#ifndef PH_UNREACHED_H
#define PH_UNREACHED_H

struct ph_job;

/* Sets up the marks for j's source tree (j->reached). Returns 0 or
 * PHSYNC_ENOMEM. */
int ph_unreached_init(struct ph_job *j);
/* Marks the source file of path (a file event's) as reached; a path not in
 * the source, or before init, is ignored. */
void ph_unreached_mark(struct ph_job *j, const char *path);
/* Counts and reports every file of the plan (new, update, moved) that no
 * file event named. For a run that ended early; files_done, the plan's
 * files failed and these then add up to files_todo. */
void ph_unreached_report(struct ph_job *j);
/* Frees the marks; safe twice. */
void ph_unreached_free(struct ph_job *j);

#endif
