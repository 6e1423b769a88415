/*
 * The flags of requester completions through unmodified rdma-core (libibverbs + its mlx5
 * provider, which decodes softhca's CQEs itself): two RC QPs of one context connected to
 * each other; a signalled SEND and RDMA WRITE with immediate complete with
 * IBV_WC_WITH_IMM on the requester's side, a plain SEND and RDMA WRITE without it; the
 * receives report the immediate values. Prints "wc_flags ok" on success; anything else
 * exits non-zero saying what differed.
 */
#include "rc_loopback.h"
#include <arpa/inet.h>
#include <stdio.h>

static struct ibv_cq *cq;

static struct ibv_wc poll_one(void)
{
	return rc_poll_one(cq);
}

struct request {
	enum ibv_wr_opcode opcode;
	int with_imm;
	const char *name;
};

static const struct request requests[] = {
	{ IBV_WR_SEND_WITH_IMM, 1, "SEND with immediate" },
	{ IBV_WR_RDMA_WRITE_WITH_IMM, 1, "RDMA WRITE with immediate" },
	{ IBV_WR_SEND, 0, "SEND" },
	{ IBV_WR_RDMA_WRITE, 0, "RDMA WRITE" },
};

/* The receives, in the order the requests consume them: opcode and immediate (0: none). */
static const struct {
	enum ibv_wc_opcode opcode;
	uint32_t imm;
} receives[] = {
	{ IBV_WC_RECV, 0x1000 },
	{ IBV_WC_RECV_RDMA_WITH_IMM, 0x1001 },
	{ IBV_WC_RECV, 0 },
};

#define NREQ (sizeof requests / sizeof requests[0])
#define NRECV (sizeof receives / sizeof receives[0])

int main(void)
{
	union ibv_gid gid;
	struct ibv_context *ctx = rc_open_first(&gid);
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	if (!pd || !cq)
		FAIL("PD or CQ failed");
	static char buf[4096];
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, sizeof buf,
				       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!mr)
		FAIL("ibv_reg_mr failed");
	struct ibv_qp *a = rc_qp(pd, cq, IBV_ACCESS_REMOTE_WRITE);
	struct ibv_qp *b = rc_qp(pd, cq, IBV_ACCESS_REMOTE_WRITE);
	rc_connect(a, b->qp_num, &gid);
	rc_connect(b, a->qp_num, &gid);

	for (size_t i = 0; i < NRECV; i++) {
		struct ibv_sge sge = { .addr = (uintptr_t)buf + 1024 + 64 * i, .length = 64,
				       .lkey = mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = 100 + i, .sg_list = &sge, .num_sge = 1 };
		struct ibv_recv_wr *bad;
		if (ibv_post_recv(b, &wr, &bad))
			FAIL("ibv_post_recv failed");
	}
	for (size_t i = 0; i < NREQ; i++) {
		struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = 16, .lkey = mr->lkey };
		struct ibv_send_wr wr = { .wr_id = 1 + i, .sg_list = &sge, .num_sge = 1,
			.opcode = requests[i].opcode, .send_flags = IBV_SEND_SIGNALED,
			.imm_data = htonl(0x1000 + i),
			.wr.rdma = { .remote_addr = (uintptr_t)buf + 512, .rkey = mr->rkey } };
		struct ibv_send_wr *bad;
		if (ibv_post_send(a, &wr, &bad))
			FAIL("ibv_post_send (%s) failed", requests[i].name);
	}

	for (size_t n = 0; n < NREQ + NRECV; n++) {
		struct ibv_wc wc = poll_one();
		if (wc.status != IBV_WC_SUCCESS)
			FAIL("wr_id %llu: %s", (unsigned long long)wc.wr_id,
			     ibv_wc_status_str(wc.status));
		int with_imm = (wc.wc_flags & IBV_WC_WITH_IMM) != 0;
		if (wc.qp_num == a->qp_num) {
			if (wc.wr_id < 1 || wc.wr_id > NREQ)
				FAIL("unknown request wr_id %llu", (unsigned long long)wc.wr_id);
			const struct request *r = &requests[wc.wr_id - 1];
			if (with_imm != r->with_imm)
				FAIL("%s: requester completion has wc_flags %#x, IBV_WC_WITH_IMM %s",
				     r->name, (unsigned)wc.wc_flags,
				     r->with_imm ? "missing" : "unexpected");
		} else {
			if (wc.wr_id < 100 || wc.wr_id >= 100 + NRECV)
				FAIL("unknown receive wr_id %llu", (unsigned long long)wc.wr_id);
			size_t i = wc.wr_id - 100;
			if (wc.opcode != receives[i].opcode || with_imm != (receives[i].imm != 0) ||
			    (with_imm && ntohl(wc.imm_data) != receives[i].imm))
				FAIL("receive %zu: opcode %d, wc_flags %#x, imm %#x", i, wc.opcode,
				     (unsigned)wc.wc_flags, ntohl(wc.imm_data));
		}
	}
	printf("wc_flags ok\n");
	return 0;
}
