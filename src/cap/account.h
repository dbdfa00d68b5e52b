/*
 * A backend's loss account as declared data (issue 29): the layers where a
 * frame the backend was handed can be lost, each with the counter that
 * counts it there and the sentence that explains it to a reader.
 *
 * A backend declares its rows once, in its own C file (cap_backend.account,
 * ending with a row whose layer is NULL); its stats() fills
 * cap_kstats.account[i] with row i's packets. capbench-cap prints them in its
 * summary line as "account": [{"layer", "counter", "packets"}, ...] and
 * --describe prints the rows with their "explains"; capbench reads only these,
 * so a new backend's layers reach the tables and the report with no change
 * to the Python side.
 */
#ifndef CAPBENCH_CAP_ACCOUNT_H
#define CAPBENCH_CAP_ACCOUNT_H

/* The most rows a backend declares (a backend with more is a build error in
 * the unit test that walks the registry). */
#define CAP_ACCOUNT_ROWS 8

struct cap_account_row {
	const char *layer;    /* where: "socket", "rx ring", "mbuf pool" (one name per layer everywhere) */
	const char *counter;  /* what counts it, as its source names it: "PACKET_STATISTICS tp_drops" */
	const char *explains; /* one sentence: why frames are lost there and what governs it */
};

/* Row i is a cross-check when bit i of cap_backend.account_cross_checks is
 * set: it counts a layer before the backend's hand-over (the NIC's) that
 * capbench reads from its own counter too, so it is shown beside that layer,
 * is not in the backend's kernel_drops and is not added to the account. */
#define CAP_ACCOUNT_CROSS_CHECK(be, i) (((be)->account_cross_checks >> (i)) & 1u)

#endif
