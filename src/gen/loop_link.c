/* SPDX-License-Identifier: MIT */
/* The xdploop engine's veth pair and its namespace (loop_link.h), made with
 * one rtnetlink request each. */
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>
#include <sched.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "loop_link.h"

/* No IPv6 on the namespace's links: a link-local address would make the
 * kernel send neighbour discovery and MLD frames from timers, on any CPU,
 * and a frame arriving at an idle end of the loop schedules that end's NAPI
 * where it arrived: the loop would wander off the CPU that seeded it. A
 * kernel without IPv6 has nothing to turn off. */
static int no_ipv6(void)
{
	static const char *const knobs[] = { "/proc/sys/net/ipv6/conf/default/disable_ipv6",
					     "/proc/sys/net/ipv6/conf/all/disable_ipv6" };

	for (unsigned int i = 0; i < sizeof(knobs) / sizeof(knobs[0]); i++) {
		int fd = open(knobs[i], O_WRONLY | O_CLOEXEC);

		if (fd < 0 && errno == ENOENT)
			continue;
		if (fd < 0 || write(fd, "1", 1) != 1) {
			int err = -errno;

			if (fd >= 0)
				close(fd);
			return err;
		}
		close(fd);
	}
	return 0;
}

int gen_loop_ns_new(int *orig_fd, int *ns_fd)
{
	int err;

	*orig_fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (*orig_fd < 0)
		return -errno;
	if (unshare(CLONE_NEWNET) < 0)
		goto err;
	*ns_fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (*ns_fd >= 0) {
		err = no_ipv6();
		if (!err)
			return 0;
		close(*ns_fd);
	} else {
		err = -errno;
	}
	setns(*orig_fd, CLONE_NEWNET);
	close(*orig_fd);
	return err;
err:
	err = -errno;
	close(*orig_fd);
	return err;
}

/* A request: a netlink header, an ifinfomsg, attributes. */
union nl_req {
	struct nlmsghdr nh;
	char buf[NLMSG_SPACE(sizeof(struct ifinfomsg)) + 512];
};

static struct rtattr *attr_put(union nl_req *req, unsigned short type, const void *data,
			       unsigned short len)
{
	struct nlmsghdr *nh = &req->nh;
	struct rtattr *rta = (struct rtattr *)(req->buf + NLMSG_ALIGN(nh->nlmsg_len));

	rta->rta_type = type;
	rta->rta_len = (unsigned short)RTA_LENGTH(len);
	if (len)
		memcpy(RTA_DATA(rta), data, len);
	nh->nlmsg_len = NLMSG_ALIGN(nh->nlmsg_len) + RTA_ALIGN(rta->rta_len);
	return rta;
}

/* Close a nest opened by attr_put(nh, type, NULL, 0). */
static void nest_end(union nl_req *req, struct rtattr *nest)
{
	nest->rta_len = (unsigned short)(req->buf + req->nh.nlmsg_len - (char *)nest);
}

/* A request of `type` and `flags` about the link ifi. */
static void req_init(union nl_req *req, unsigned short type, unsigned short flags,
		     const struct ifinfomsg *ifi)
{
	memset(req, 0, sizeof(*req));
	req->nh.nlmsg_len = NLMSG_LENGTH(sizeof(*ifi));
	req->nh.nlmsg_type = type;
	req->nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | flags;
	memcpy(NLMSG_DATA(&req->nh), ifi, sizeof(*ifi));
}

/* Send one request and read its acknowledgement: 0 or the kernel's -errno. */
static int nl_talk(int fd, struct nlmsghdr *nh)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	char buf[1024];
	ssize_t n;

	if (sendto(fd, nh, nh->nlmsg_len, 0, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -errno;
	n = recv(fd, buf, sizeof(buf), 0);
	if (n < 0)
		return -errno;
	for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n))
		if (h->nlmsg_type == NLMSG_ERROR)
			return ((struct nlmsgerr *)NLMSG_DATA(h))->error;
	return -EPROTO;
}

static int link_up(int fd, const char *name)
{
	struct ifinfomsg ifi = { .ifi_family = AF_UNSPEC, .ifi_flags = IFF_UP, .ifi_change = IFF_UP };
	union nl_req req;

	ifi.ifi_index = (int)if_nametoindex(name);
	if (!ifi.ifi_index)
		return -errno;
	req_init(&req, RTM_NEWLINK, 0, &ifi);
	return nl_talk(fd, &req.nh);
}

int gen_loop_veth_add(const char *a, const char *b, unsigned int mtu)
{
	struct ifinfomsg ifi = { .ifi_family = AF_UNSPEC };
	union nl_req req;
	struct rtattr *info, *data, *p;
	int fd, err;

	req_init(&req, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, &ifi);
	attr_put(&req, IFLA_IFNAME, a, (unsigned short)(strlen(a) + 1));
	attr_put(&req, IFLA_MTU, &mtu, sizeof(mtu));
	info = attr_put(&req, IFLA_LINKINFO, NULL, 0);
	attr_put(&req, IFLA_INFO_KIND, "veth", 5);
	data = attr_put(&req, IFLA_INFO_DATA, NULL, 0);
	p = attr_put(&req, VETH_INFO_PEER, &ifi, sizeof(ifi));
	attr_put(&req, IFLA_IFNAME, b, (unsigned short)(strlen(b) + 1));
	attr_put(&req, IFLA_MTU, &mtu, sizeof(mtu));
	nest_end(&req, p);
	nest_end(&req, data);
	nest_end(&req, info);

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0)
		return -errno;
	err = nl_talk(fd, &req.nh);
	if (!err)
		err = link_up(fd, a);
	if (!err)
		err = link_up(fd, b);
	close(fd);
	return err;
}
