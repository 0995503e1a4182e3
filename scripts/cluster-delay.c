// scripts/cluster's delay fault where the kernel has no netem qdisc: holds
// every packet of one NFQUEUE queue for a fixed time, then lets it go, in
// the order they came. scripts/cluster builds it (cc, libnetfilter_queue)
// and runs it in the node's network namespace, whose iptables send the
// node's outgoing packets to the queue.
//
//   cluster-delay QUEUE MILLISECONDS
#include <arpa/inet.h>
#include <errno.h>
#include <libnetfilter_queue/libnetfilter_queue.h>
#include <linux/netfilter.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

// Packets waiting for their time, oldest first: a ring, since every packet
// waits as long as every other.
enum { kRing = 1 << 16 };
static uint32_t ids[kRing];
static double due[kRing];
static unsigned head, tail;
static double delay_s;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int held(struct nfq_q_handle* queue, struct nfgenmsg* message, struct nfq_data* packet, void* unused) {
  (void)message;
  (void)unused;
  const struct nfqnl_msg_packet_hdr* header = nfq_get_msg_packet_hdr(packet);
  if (!header) return 0;
  const uint32_t id = ntohl(header->packet_id);
  if (tail - head == kRing) return nfq_set_verdict(queue, id, NF_ACCEPT, 0, NULL);  // full: no delay, never a drop
  ids[tail % kRing] = id;
  due[tail % kRing] = now() + delay_s;
  ++tail;
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: cluster-delay QUEUE MILLISECONDS\n");
    return 2;
  }
  const int queue_number = atoi(argv[1]);
  delay_s = atof(argv[2]) / 1000;
  struct nfq_handle* handle = nfq_open();
  if (!handle || nfq_bind_pf(handle, AF_INET) < 0) {
    perror("cluster-delay: nfq_open");
    return 1;
  }
  struct nfq_q_handle* queue = nfq_create_queue(handle, (uint16_t)queue_number, held, NULL);
  if (!queue || nfq_set_mode(queue, NFQNL_COPY_META, 0) < 0) {
    perror("cluster-delay: nfq_create_queue");
    return 1;
  }
  nfq_set_queue_maxlen(queue, kRing);
  const int fd = nfq_fd(handle);
  char buffer[65536] __attribute__((aligned));
  for (;;) {
    int wait_ms = -1;
    if (head != tail) {
      const double left = due[head % kRing] - now();
      wait_ms = left <= 0 ? 0 : (int)(left * 1000) + 1;
    }
    struct pollfd pfd = {fd, POLLIN, 0};
    if (poll(&pfd, 1, wait_ms) < 0 && errno != EINTR) return 1;
    if (pfd.revents & POLLIN) {
      const ssize_t n = recv(fd, buffer, sizeof buffer, MSG_DONTWAIT);
      if (n > 0) nfq_handle_packet(handle, buffer, (int)n);
    }
    for (const double t = now(); head != tail && due[head % kRing] <= t; ++head)
      nfq_set_verdict(queue, ids[head % kRing], NF_ACCEPT, 0, NULL);
  }
}
