/* SPDX-License-Identifier: MIT */
#include "xdp_common.h"

#include <errno.h>
#include <linux/if_packet.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util.h"
#include "xdp_prog.h"

int cap_xdp_hook_init(const struct cap_cfg *cfg, struct cap_xdp_hook *h)
{
	struct packet_mreq mr = { .mr_ifindex = cfg->ifindex, .mr_type = PACKET_MR_PROMISC };
	int err;

	h->link_fd = h->promisc_fd = -1;
	h->mode = "none";
	if (!cfg->promisc)
		return 0;
	h->promisc_fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
	if (h->promisc_fd < 0) {
		err = -errno;
		if (err == -EPERM || err == -EACCES) /* no CAP_NET_RAW */
			return cb_user_fault(err, "cannot open an AF_PACKET socket to make %s promiscuous "
					     "(%s): run as root, or use --no-promisc", cfg->iface,
					     strerror(-err));
		fprintf(stderr, "capbench-cap: cannot open an AF_PACKET socket to make %s promiscuous: "
			"%s\n", cfg->iface, strerror(-err));
		return err;
	}
	if (setsockopt(h->promisc_fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mr, sizeof(mr)) < 0) {
		err = -errno;
		fprintf(stderr, "capbench-cap: cannot make %s promiscuous: %s\n", cfg->iface,
			strerror(-err));
		close(h->promisc_fd);
		h->promisc_fd = -1;
		return err;
	}
	return 0;
}

int cap_xdp_hook_attach(const struct cap_cfg *cfg, struct cap_xdp_hook *h, int prog_fd)
{
	char why[256];

	h->link_fd = cb_xdp_attach(prog_fd, cfg->iface, cfg->ifindex, 0, why, sizeof(why));
	if (h->link_fd < 0) {
		int err = h->link_fd;

		/* Another program holds the interface (EBUSY, EEXIST: `why`
		 * names the fix), no privilege, no such interface: the
		 * user's. Anything else the kernel says is a failure. */
		if (err == -EBUSY || err == -EEXIST || err == -EPERM || err == -ENODEV)
			return cb_user_fault(err, "%s", why);
		fprintf(stderr, "capbench-cap: %s\n", why);
		return err;
	}
	h->mode = cb_xdp_attached_mode(cfg->ifindex);
	return 0;
}

void cap_xdp_hook_release(struct cap_xdp_hook *h)
{
	if (h->link_fd >= 0)
		close(h->link_fd);
	if (h->promisc_fd >= 0)
		close(h->promisc_fd);
	h->link_fd = h->promisc_fd = -1;
}

int cap_xdp_kstats(int counts_map_fd, struct cap_kstats *k)
{
	struct cb_xdp_counts c;
	int err = cb_xdp_read_counts(counts_map_fd, &c);

	if (err)
		return err;
	k->xdp_packets = c.packets;
	k->xdp_bytes = c.bytes;
	k->xdp_capbench = c.capbench;
	k->xdp_not_redirected = c.not_redirected;
	k->has_xdp = 1;
	return 0;
}

unsigned int cap_rx_queue_count(const char *iface)
{
	char path[128];
	unsigned int n = 0;

	for (;;) {
		snprintf(path, sizeof(path), "/sys/class/net/%s/queues/rx-%u", iface, n);
		if (access(path, F_OK))
			return n;
		n++;
	}
}

int cap_bpf_load_failed(int err, const char *what)
{
	if (err == -EPERM)
		return cb_user_fault(err, "cannot load %s: %s: run as root", what, strerror(-err));
	fprintf(stderr, "capbench-cap: cannot load %s: %s\n", what, strerror(-err));
	return err;
}
