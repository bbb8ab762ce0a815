// Point-to-point exchanges between the CTAs of a thread-block cluster
// (sm_90): a "mailbox" is a transaction-count mbarrier in the receiving
// CTA's shared memory plus the words it receives; senders write with
// st.async, whose completion adds the bytes written to the receiver's
// mbarrier, and the receiver waits until the bytes it expects have landed.
//
// Why not cluster.sync after remote stores: that barrier's arrive carries a
// release fence (the sender waits until its remote stores are acknowledged)
// and its wait needs every thread of every CTA of the cluster, so one
// exchange costs a fence round trip plus the barrier's own round trip, and
// every CTA waits for the slowest one even when it only needs some of the
// data.  At B = 1 the cluster kernel's CTA 0 spent 42 % of its stall samples
// waiting at cluster barriers and 12 % on their fences (perf-notes v63).
// A mailbox costs the one-way trip of the data: the receiver's wait ends
// when the last byte it needs lands.
//
// Rules the callers keep (PTX ISA, mbarrier and st.async):
// - each mailbox is used for one exchange (one phase, parity 0): a mailbox
//   reused before every sender has seen its previous phase complete could
//   count a later message into the earlier phase;
// - mailboxes are initialised before any CTA of the cluster can send to
//   them: init, then mailbox_init_fence, then a cluster barrier (arrive
//   may be relaxed) that every sender passes first;
// - the receiver arrives once (expect) with the bytes it will receive; the
//   messages may land before that arrive (the transaction count goes
//   negative and the phase cannot complete without the arrive);
// - a CTA leaves only after the waits for everything sent to it.  That a
//   sender may leave once its st.async stores are issued (the cluster
//   kernel's CTAs 1..15 do) is what the GPU tests and compute-sanitizer
//   showed at v66-v67, not something the PTX ISA states.
#pragma once

#include <stdint.h>

namespace tokensift::cuda_detail {

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return (uint32_t)__cvta_generic_to_shared(p);
}

// One thread, before the cluster barrier that publishes the mailboxes.
__device__ __forceinline__ void mailbox_init(uint64_t* bar) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_addr(bar)) : "memory");
}
__device__ __forceinline__ void mailbox_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

// The receiver's one arrive: `bytes` will land in this mailbox.
__device__ __forceinline__ void mailbox_expect(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)), "r"(bytes)
               : "memory");
}

// Every thread that reads the mailbox's words waits (phase 0 completes).
__device__ __forceinline__ void mailbox_wait(uint64_t* bar) {
  const uint32_t a = smem_addr(bar);
  uint32_t done = 0;
  do {
    asm volatile(
        "{\n\t.reg .pred p;\n\t"
        "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], 0;\n\t"
        "selp.u32 %0, 1, 0, p;\n\t}"
        : "=r"(done)
        : "r"(a)
        : "memory");
  } while (!done);
}

// The address of this CTA's shared word `p` in CTA `rank` of the cluster.
__device__ __forceinline__ uint32_t cluster_addr(const void* p, uint32_t rank) {
  uint32_t r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(smem_addr(p)), "r"(rank));
  return r;
}

// 16 bytes (16-byte aligned) into CTA `rank`'s copy of `dst`, counted by
// its copy of `bar`.
__device__ __forceinline__ void mailbox_send(void* dst, uint64_t* bar, uint32_t rank, uint4 v) {
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32 [%0], {%1, %2, %3, %4}, [%5];" ::"r"(
                   cluster_addr(dst, rank)),
               "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w), "r"(cluster_addr(bar, rank))
               : "memory");
}
// 8 bytes (8-byte aligned), likewise.
__device__ __forceinline__ void mailbox_send(void* dst, uint64_t* bar, uint32_t rank, uint64_t v) {
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b64 [%0], %1, [%2];" ::"r"(
                   cluster_addr(dst, rank)),
               "l"(v), "r"(cluster_addr(bar, rank))
               : "memory");
}

}  // namespace tokensift::cuda_detail
