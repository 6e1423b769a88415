/*
 * A type 1 memory window through unmodified rdma-core (libibverbs + its mlx5 provider):
 * two RC QPs of one context connected to each other; QP a binds a window over part of a
 * region that grants no remote access itself (ibv_bind_mw builds the UMR WQE), QP b
 * writes and reads through the window's rkey; a write one byte past the window, a write
 * with the region's own rkey and a write after an unbind must fail with a remote access
 * error. Prints "mw ok" on success; anything else exits non-zero saying what failed.
 */
#include "rc_loopback.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct ibv_cq *cq;

static struct ibv_wc poll_one(void)
{
	return rc_poll_one(cq);
}

/* A fresh connected pair (a refused access leaves the old one in the error state). */
static void pair(struct ibv_pd *pd, union ibv_gid *gid, struct ibv_qp **a, struct ibv_qp **b)
{
	int access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	*a = rc_qp(pd, cq, access);
	*b = rc_qp(pd, cq, access);
	rc_connect(*a, (*b)->qp_num, gid);
	rc_connect(*b, (*a)->qp_num, gid);
}

static void expect_refused(struct ibv_pd *pd, union ibv_gid *gid, uint64_t addr, uint32_t rkey,
			   const char *what)
{
	struct ibv_qp *a, *b;
	pair(pd, gid, &a, &b);
	rc_write_inline(b, addr, rkey, "x");
	struct ibv_wc wc = poll_one();
	if (wc.status != IBV_WC_REM_ACCESS_ERR)
		FAIL("%s: status %s, expected a remote access error", what,
		     ibv_wc_status_str(wc.status));
	while (ibv_poll_cq(cq, 1, &wc) > 0)
		;
	/* The pair stays: destroying a QP waits until its async error event (the responder's
	 * access error) is acknowledged, which this program does not read; exit frees it. */
	(void)a;
}

int main(void)
{
	union ibv_gid gid;
	struct ibv_context *ctx = rc_open_first(&gid);
	struct ibv_device_attr dev;
	if (ibv_query_device(ctx, &dev))
		FAIL("ibv_query_device failed");
	if (!(dev.device_cap_flags & IBV_DEVICE_MEM_WINDOW) || dev.max_mw == 0)
		FAIL("the device reports no memory windows (caps %#x, max_mw %d)",
		     dev.device_cap_flags, dev.max_mw);
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	if (!pd || !cq)
		FAIL("PD or CQ failed");
	static char target[4096], local[64];
	struct ibv_mr *mr = ibv_reg_mr(pd, target, sizeof target,
				       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	struct ibv_mr *lmr = ibv_reg_mr(pd, local, sizeof local, IBV_ACCESS_LOCAL_WRITE);
	if (!mr || !lmr)
		FAIL("ibv_reg_mr failed");
	struct ibv_mw *mw = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
	if (!mw)
		FAIL("ibv_alloc_mw failed");
	uint32_t first = mw->rkey;

	struct ibv_qp *a, *b;
	pair(pd, &gid, &a, &b);
	struct ibv_mw_bind bind = { .wr_id = 1, .send_flags = IBV_SEND_SIGNALED,
		.bind_info = { .mr = mr, .addr = (uintptr_t)target + 256, .length = 512,
			       .mw_access_flags = IBV_ACCESS_REMOTE_WRITE |
						  IBV_ACCESS_REMOTE_READ } };
	if (ibv_bind_mw(a, mw, &bind))
		FAIL("ibv_bind_mw failed");
	struct ibv_wc wc = poll_one();
	if (wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_BIND_MW || wc.wr_id != 1)
		FAIL("bind completion: status %s opcode %d", ibv_wc_status_str(wc.status), wc.opcode);
	uint32_t key = mw->rkey;
	if (key == first || (key >> 8) != (first >> 8))
		FAIL("the bind gave rkey %#x after %#x", key, first);

	rc_write_inline(b, (uintptr_t)target + 256 + 500, key, "windowed");
	wc = poll_one();
	if (wc.status != IBV_WC_SUCCESS)
		FAIL("write through the window: %s", ibv_wc_status_str(wc.status));
	if (memcmp(target + 756, "windowed", 8))
		FAIL("the write through the window did not land");
	struct ibv_sge sge = { .addr = (uintptr_t)local, .length = 8, .lkey = lmr->lkey };
	struct ibv_send_wr rd = { .wr_id = 3, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_READ, .send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = (uintptr_t)target + 756, .rkey = key } }, *bad;
	if (ibv_post_send(b, &rd, &bad))
		FAIL("ibv_post_send (RDMA READ) failed");
	wc = poll_one();
	if (wc.status != IBV_WC_SUCCESS || memcmp(local, "windowed", 8))
		FAIL("read through the window: %s", ibv_wc_status_str(wc.status));

	expect_refused(pd, &gid, (uintptr_t)target + 256 + 512, key, "one byte past the window");
	expect_refused(pd, &gid, (uintptr_t)target + 300, mr->rkey, "the region's own rkey");

	/* Unbind (length 0) on a fresh pair: the key stops working. */
	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
	pair(pd, &gid, &a, &b);
	struct ibv_mw_bind unbind = { .wr_id = 4, .send_flags = IBV_SEND_SIGNALED,
		.bind_info = { .mr = mr } };
	if (ibv_bind_mw(a, mw, &unbind))
		FAIL("ibv_bind_mw (unbind) failed");
	wc = poll_one();
	if (wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_BIND_MW)
		FAIL("unbind completion: %s", ibv_wc_status_str(wc.status));
	expect_refused(pd, &gid, (uintptr_t)target + 300, key, "the key after an unbind");
	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
	if (ibv_dealloc_mw(mw))
		FAIL("ibv_dealloc_mw failed");
	printf("mw ok\n");
	return 0;
}
