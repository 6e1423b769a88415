/*
 * What the rdma-core test programs share: failing with a message, and RC QPs of one
 * context brought up and connected to each other on port 1 (RoCE, GID index 0).
 */
#ifndef RC_LOOPBACK_H
#define RC_LOOPBACK_H

#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

/* The first device, opened, and its port 1 GID 0. */
static struct ibv_context *rc_open_first(union ibv_gid *gid)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	if (!list || !list[0])
		FAIL("no device");
	struct ibv_context *ctx = ibv_open_device(list[0]);
	if (!ctx)
		FAIL("ibv_open_device failed");
	if (ibv_query_gid(ctx, 1, 0, gid))
		FAIL("ibv_query_gid failed");
	return ctx;
}

/* An RC QP completing into `send_cq` and `recv_cq`, in INIT with remote rights `access`. */
static struct ibv_qp *rc_qp_on(struct ibv_pd *pd, struct ibv_cq *send_cq,
			       struct ibv_cq *recv_cq, int access)
{
	struct ibv_qp_init_attr init = {
		.send_cq = send_cq, .recv_cq = recv_cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 4, .max_send_sge = 1,
			 .max_recv_sge = 1, .max_inline_data = 32 },
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &init);
	if (!qp)
		FAIL("ibv_create_qp failed");
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qp_access_flags = access };
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS))
		FAIL("INIT failed");
	return qp;
}

/* An RC QP on `cq` (send and receive), in INIT with remote rights `access`. */
static struct ibv_qp *rc_qp(struct ibv_pd *pd, struct ibv_cq *cq, int access)
{
	return rc_qp_on(pd, cq, cq, access);
}

/* INIT -> RTR -> RTS towards QP `dest` at `gid` (PSNs 0). */
static void rc_connect(struct ibv_qp *qp, uint32_t dest, union ibv_gid *gid)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
		.dest_qp_num = dest, .rq_psn = 0, .max_dest_rd_atomic = 1, .min_rnr_timer = 12,
		.ah_attr = { .is_global = 1, .port_num = 1,
			     .grh = { .dgid = *gid, .sgid_index = 0, .hop_limit = 1 } } };
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		FAIL("RTR failed");
	struct ibv_qp_attr r = { .qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 7,
		.rnr_retry = 7, .sq_psn = 0, .max_rd_atomic = 1 };
	if (ibv_modify_qp(qp, &r, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
		FAIL("RTS failed");
}

/* A signalled RDMA WRITE of `text` (inline, without its NUL) to `addr`/`rkey`. */
static inline void rc_write_inline(struct ibv_qp *qp, uint64_t addr, uint32_t rkey, const char *text)
{
	struct ibv_sge sge = { .addr = (uintptr_t)text, .length = strlen(text) };
	struct ibv_send_wr wr = { .wr_id = 2, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE,
		.wr.rdma = { .remote_addr = addr, .rkey = rkey } };
	struct ibv_send_wr *bad;
	if (ibv_post_send(qp, &wr, &bad))
		FAIL("ibv_post_send (RDMA WRITE) failed");
}

/* The next completion of `cq`, polled for at most 10 s. */
static inline struct ibv_wc rc_poll_one(struct ibv_cq *cq)
{
	struct ibv_wc wc;
	time_t start = time(NULL);
	for (;;) {
		int n = ibv_poll_cq(cq, 1, &wc);
		if (n < 0)
			FAIL("ibv_poll_cq failed");
		if (n == 1)
			return wc;
		if (time(NULL) - start > 10)
			FAIL("no completion within 10 s");
	}
}

#endif
