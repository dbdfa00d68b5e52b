/* SPDX-License-Identifier: MIT */
#include "pktsock.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_ether.h>
#include <linux/filter.h>
#include <linux/if_packet.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "util.h"

/* --filter on a packet socket, before it is bound: no frame passes
 * unfiltered. libpcap's struct bpf_insn is the kernel's struct sock_filter
 * (code, jt, jf, k); for a SOCK_RAW socket the kernel runs the filter on
 * the frame from its Ethernet header (packet_rcv() pushes the MAC header
 * back first), which is what a DLT_EN10MB program reads. A frame it rejects
 * is not queued and not counted in PACKET_STATISTICS. */
static int attach_filter(int fd, const struct cap_cfg *cfg)
{
	struct sock_fprog prog = {
		.len = (unsigned short)cfg->filter_len,
		.filter = (struct sock_filter *)cfg->filter_insns,
	};

	if (!cfg->filter || !setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)))
		return 0;
	fprintf(stderr, "capbench-cap: the kernel refuses the filter '%s' on a packet socket: %s\n",
		cfg->filter, strerror(errno));
	return -errno;
}

int pktsock_open(const struct cap_cfg *cfg, int version)
{
	int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0), err;

	if (fd < 0) {
		err = -errno;
		/* Without CAP_NET_RAW (EPERM, EACCES): the user's to fix. */
		if (err == -EPERM || err == -EACCES)
			return cb_user_fault(err, "cannot open an AF_PACKET socket (%s): run as root "
					     "(packet capture needs CAP_NET_RAW)", strerror(-err));
		fprintf(stderr, "capbench-cap: cannot open an AF_PACKET socket: %s\n", strerror(-err));
		return err;
	}
	if (version >= 0 && setsockopt(fd, SOL_PACKET, PACKET_VERSION, &version, sizeof(version)) < 0) {
		err = -errno;
		close(fd);
		/* Another backend works: the user's choice to change. */
		return cb_user_fault(err, "this kernel has no TPACKET_V%d (%s): use --backend pcap",
				     version + 1, strerror(-err));
	}
	err = attach_filter(fd, cfg);
	if (err) {
		close(fd);
		return err;
	}
	return fd;
}

int pktsock_bind(int fd, const struct cap_cfg *cfg)
{
	struct sockaddr_ll sll = {
		.sll_family = AF_PACKET,
		.sll_protocol = htons(ETH_P_ALL),
		.sll_ifindex = cfg->ifindex,
	};
	int err;

	if (bind(fd, (struct sockaddr *)&sll, sizeof(sll)) < 0) {
		err = -errno;
		/* The interface went away since the options were read. */
		if (err == -ENODEV)
			return cb_user_fault(err, "cannot bind to %s: %s", cfg->iface, strerror(-err));
		fprintf(stderr, "capbench-cap: cannot bind to %s: %s\n", cfg->iface, strerror(-err));
		return err;
	}
	if (cfg->promisc) {
		struct packet_mreq mr = { .mr_ifindex = cfg->ifindex, .mr_type = PACKET_MR_PROMISC };

		if (setsockopt(fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mr, sizeof(mr)) < 0) {
			err = -errno;
			fprintf(stderr, "capbench-cap: cannot make %s promiscuous: %s\n", cfg->iface,
				strerror(-err));
			return err;
		}
	}
	return 0;
}

int pktsock_open_ring(const struct cap_cfg *cfg, int version, const void *req, socklen_t req_len,
		      size_t ring_len, const char *geometry, const char *fix, int *fd, void **ring)
{
	void *p;
	int s = pktsock_open(cfg, version), err;

	if (s < 0)
		return s;
	if (setsockopt(s, SOL_PACKET, PACKET_RX_RING, req, req_len) < 0) {
		err = -errno;
		/* EINVAL: a geometry the kernel does not take (packet_set_ring()
		 * checks the sizes' alignment and products), the user's to fix;
		 * ENOMEM: it could not allocate the ring, a failure. */
		if (err == -EINVAL)
			cb_user_fault(err, "the kernel refuses a ring of %s (%s): %s", geometry,
				      strerror(-err), fix);
		else
			fprintf(stderr, "capbench-cap: the kernel cannot set up a ring of %s (%s): %s\n",
				geometry, strerror(-err), fix);
		goto err_close;
	}
	/* MAP_POPULATE: fault the whole ring in now, not on the first lap. */
	p = mmap(NULL, ring_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, s, 0);
	if (p == MAP_FAILED) {
		err = -errno;
		fprintf(stderr, "capbench-cap: cannot map the ring: %s\n", strerror(errno));
		goto err_close;
	}
	err = pktsock_bind(s, cfg);
	if (err)
		goto err_unmap;
	*fd = s;
	*ring = p;
	return 0;

err_unmap:
	munmap(p, ring_len);
err_close:
	close(s);
	return err;
}
