/* SPDX-License-Identifier: MIT */
#include "capture_writer.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

#define LINKTYPE_ETHERNET 1
#define PCAP_MAGIC_NS 0xa1b23c4du

static void put(struct cap_writer *w, const void *p, size_t n)
{
	memcpy(w->buf + w->len, p, n);
	w->len += n;
}

static void flush(struct cap_writer *w)
{
	size_t off = 0;

	while (off < w->len && !w->err) {
		ssize_t n = write(w->fd, w->buf + off, w->len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			w->err = -errno;
		else
			off += (size_t)n;
	}
	w->bytes_written += off;
	w->len = 0;
}

static void file_header(struct cap_writer *w)
{
	if (!w->pcapng) {
		/* magic, version 2.4, thiszone, sigfigs, snaplen, link type */
		uint32_t h[6] = { PCAP_MAGIC_NS, 2 | (4u << 16), 0, 0, w->snaplen, LINKTYPE_ETHERNET };

		put(w, h, sizeof(h));
		return;
	}
	{
		/* Section Header Block: type, length, byte-order magic, version
		 * 1.0, section length unknown (-1), length again. */
		uint32_t shb[7] = { 0x0A0D0D0A, 28, 0x1A2B3C4D, 1, 0xffffffffu, 0xffffffffu, 28 };
		/* Interface Description Block with the option if_tsresol = 9
		 * (nanoseconds): type, length, link type + reserved, snaplen,
		 * option code 9 length 1, value 9 + padding, opt_endofopt,
		 * length again. */
		uint32_t idb[8] = { 0x00000001, 32, LINKTYPE_ETHERNET, w->snaplen, 9 | (1u << 16), 9, 0, 32 };

		put(w, shb, sizeof(shb));
		put(w, idb, sizeof(idb));
	}
}

/* Open `path` for writing without changing what it holds: O_CREAT | O_EXCL
 * first, so we know whether the file is ours (created now, to be removed if
 * the capture never starts) or the user's (left as it is until
 * cap_writer_begin()). No O_TRUNC here: truncating is what destroys a file. */
static int open_untouched(struct cap_writer *w)
{
	struct stat st;

	w->fd = open(w->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (w->fd >= 0) {
		w->created = 1;
		return 0;
	}
	if (errno != EEXIST)
		return -errno;
	/* Opening an existing file for writing changes neither its contents
	 * nor its times. O_NONBLOCK: a FIFO without a reader fails at once
	 * (ENXIO, fifo(7)) instead of blocking; whatever opens is then refused
	 * unless it is a regular file (a device such as /dev/zero swallows the
	 * records, and nobody could read them back). */
	w->fd = open(w->path, O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (w->fd < 0)
		return -errno;
	if (fstat(w->fd, &st) || !S_ISREG(st.st_mode) ||
	    fcntl(w->fd, F_SETFL, fcntl(w->fd, F_GETFL) & ~O_NONBLOCK)) {
		close(w->fd);
		w->fd = -1;
		return -EINVAL;
	}
	return 0;
}

int cap_writer_probe(const char *path, char *err, size_t errlen)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	struct stat st;
	int e = 0;

	if (!*path) {
		snprintf(err, errlen, "--write needs a file name, e.g. --write capture.pcap");
		return -ENOENT;
	}
	if (!stat(path, &st)) {
		if (!S_ISREG(st.st_mode)) {
			snprintf(err, errlen, "cannot write %s: it is %s, not a regular file: choose "
				 "another --write file", path, cb_file_kind(st.st_mode));
			return -EINVAL;
		}
		e = access(path, W_OK) ? -errno : 0;
	} else if (errno != ENOENT) {
		e = -errno;
	} else if (!slash) {
		e = access(".", W_OK | X_OK) ? -errno : 0;
	} else if ((size_t)(slash - path) >= sizeof(dir)) {
		e = -ENAMETOOLONG;
	} else {
		memcpy(dir, path, (size_t)(slash - path));
		dir[slash == path ? 1 : slash - path] = '\0';
		e = access(dir, W_OK | X_OK) ? -errno : 0;
	}
	if (e)
		snprintf(err, errlen, "cannot write %s: %s: choose another --write file", path,
			 strerror(-e));
	return e;
}

int cap_writer_open(struct cap_writer *w, const char *path, uint32_t snaplen)
{
	char msg[PATH_MAX + 128];
	size_t n = strlen(path);
	int err;

	memset(w, 0, sizeof(*w));
	w->path = path;
	w->snaplen = snaplen;
	w->pcapng = n > 7 && !strcmp(path + n - 7, ".pcapng");
	w->buf = malloc(CAP_WRITER_BLOCK);
	if (!w->buf)
		return -ENOMEM;
	/* The probe names what is wrong (an empty name, a device, a FIFO);
	 * open_untouched() checks the file it opened again. */
	err = cap_writer_probe(path, msg, sizeof(msg));
	if (err) {
		fprintf(stderr, "capbench-cap: %s\n", msg);
		free(w->buf);
		w->buf = NULL;
		return err;
	}
	err = open_untouched(w);
	if (err) {
		fprintf(stderr, "capbench-cap: cannot write %s: %s: choose another --write file\n", path,
			err == -EINVAL ? "not a regular file" : strerror(-err));
		free(w->buf);
		w->buf = NULL;
		return err;
	}
	/* Only buffered: nothing reaches the file before the first flush. */
	file_header(w);
	return 0;
}

int cap_writer_begin(struct cap_writer *w)
{
	struct stat st;

	/* Now the old contents go. Only a regular file can be truncated (a
	 * FIFO or /dev/null cannot, and needs no truncating). */
	if (w->created || fstat(w->fd, &st) || !S_ISREG(st.st_mode))
		return 0;
	if (ftruncate(w->fd, 0)) {
		int err = -errno;

		fprintf(stderr, "capbench-cap: cannot truncate %s: %s: choose another --write file\n",
			w->path, strerror(-err));
		return err;
	}
	return 0;
}

void cap_writer_abandon(struct cap_writer *w)
{
	if (!w->buf)
		return;
	close(w->fd);
	if (w->created)
		unlink(w->path); /* ours, and empty: leave nothing behind */
	free(w->buf);
	w->buf = NULL;
}

void cap_writer_add(struct cap_writer *w, const uint8_t *data, uint32_t caplen, uint32_t wirelen,
		    uint64_t ts_ns)
{
	uint32_t len = caplen < w->snaplen ? caplen : w->snaplen;
	uint32_t pad = (4 - (len & 3)) & 3;
	size_t need = (w->pcapng ? 32 : 16) + len + pad;
	static const uint8_t zero[4];

	if (w->err)
		return;
	if (w->len + need > CAP_WRITER_BLOCK)
		flush(w);
	if (!w->pcapng) {
		uint32_t h[4] = { (uint32_t)(ts_ns / 1000000000ull), (uint32_t)(ts_ns % 1000000000ull), len,
				  wirelen };

		put(w, h, sizeof(h));
		put(w, data, len);
	} else {
		/* Enhanced Packet Block: type, length, interface 0, timestamp
		 * high and low (units of if_tsresol), captured, original,
		 * data padded to 32 bits, length again. */
		uint32_t total = (uint32_t)need;
		uint32_t h[7] = { 0x00000006, total, 0, (uint32_t)(ts_ns >> 32), (uint32_t)ts_ns, len,
				  wirelen };

		put(w, h, sizeof(h));
		put(w, data, len);
		put(w, zero, pad);
		put(w, &total, 4);
	}
	w->records++;
}

int cap_writer_close(struct cap_writer *w)
{
	if (!w->buf)
		return 0;
	flush(w);
	if (close(w->fd) && !w->err)
		w->err = -errno;
	free(w->buf);
	w->buf = NULL;
	if (w->err)
		fprintf(stderr, "capbench-cap: writing %s failed: %s\n", w->path, strerror(-w->err));
	return w->err;
}
