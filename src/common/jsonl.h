/* SPDX-License-Identifier: MIT */
/* A minimal JSON Lines writer: build one object, print it as one line and
 * flush, so a reader on a pipe sees each line as soon as it is complete.
 *
 *   struct cb_json j;
 *   cb_json_begin(&j, "summary");
 *   cb_json_u64(&j, "sent", sent);
 *   cb_json_end(&j, stdout);
 */
#ifndef CAPBENCH_JSONL_H
#define CAPBENCH_JSONL_H

#include <stdint.h>
#include <stdio.h>

struct cb_json {
	/* Room for a summary with a frame-length histogram of every length
	 * from 64 to 9018 B; a line that would not fit is not written at all
	 * (cb_json_end returns -EOVERFLOW), never cut. */
	char buf[256 * 1024];
	size_t len;
	int need_comma;
	int overflow;
};

/* type NULL: an object without a "type" key (a document, not a line kind). */
void cb_json_begin(struct cb_json *j, const char *type);
void cb_json_u64(struct cb_json *j, const char *key, uint64_t v);
void cb_json_i64(struct cb_json *j, const char *key, int64_t v);
void cb_json_double(struct cb_json *j, const char *key, double v);
/* A wall-clock time in nanoseconds since the epoch as seconds with three
 * decimals (1764158400.250): a double's %.17g would print a millisecond as
 * .24999999, and readers compare these values for equality. */
void cb_json_epoch_ms(struct cb_json *j, const char *key, uint64_t ns);
void cb_json_str(struct cb_json *j, const char *key, const char *v);
void cb_json_bool(struct cb_json *j, const char *key, int v);
void cb_json_obj_begin(struct cb_json *j, const char *key);
void cb_json_obj_end(struct cb_json *j);
/* An array of objects: arr_begin(key), then elem_begin() ... obj_end() per
 * element, then arr_end(). */
void cb_json_arr_begin(struct cb_json *j, const char *key);
void cb_json_elem_begin(struct cb_json *j);
/* A number as the next element of an array. */
void cb_json_arr_u64(struct cb_json *j, uint64_t v);
void cb_json_arr_i64(struct cb_json *j, int64_t v);
void cb_json_arr_str(struct cb_json *j, const char *v);
void cb_json_arr_end(struct cb_json *j);
/* key: [the strings of v, up to a NULL or max of them]. */
void cb_json_strs(struct cb_json *j, const char *key, const char *const *v, size_t max);
/* Close the object, write it with a newline and flush. Returns 0 or -EIO. */
int cb_json_end(struct cb_json *j, FILE *out);

#endif
