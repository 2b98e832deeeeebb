// egw-gateway: what a gateway pod's container runs. The pod only holds its place: the scheduler
// puts it on a node, its readiness (the agent's IPProgrammed gate) says that node's agent has
// programmed the policy's egress IPs, and its deletion moves them. The packets never pass
// through this process; egw-agent on the node handles them in the kernel. So it waits for
// SIGTERM (the kubelet's stop) or SIGINT and exits 0 at once, so that a gateway pod never runs
// out its termination grace period. No libraries beyond libc: it starts in a millisecond and
// costs a few hundred KiB of memory per gateway.
#include <csignal>
#include <cstdio>
#include <cstring>

namespace {

int usage() {
  std::fprintf(stderr,
               "usage: egw-gateway [--version]\n"
               "Holds a gateway pod's place until SIGTERM or SIGINT; egw-agent carries its "
               "packets.\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "--version") == 0) {
    std::printf("egw-gateway %s\n", EGRESS_VERSION);
    return 0;
  }
  if (argc != 1) {
    return usage();
  }
  // Blocked before they can arrive, then taken synchronously: no handler, no race.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  if (sigprocmask(SIG_BLOCK, &stop, nullptr) != 0) {
    std::perror("egw-gateway: sigprocmask");
    return 1;
  }
  std::printf("egw-gateway %s: holding this gateway pod's place until SIGTERM\n", EGRESS_VERSION);
  std::fflush(stdout);
  int got = 0;
  if (sigwait(&stop, &got) != 0) {
    std::fprintf(stderr, "egw-gateway: sigwait failed\n");
    return 1;
  }
  std::printf("egw-gateway: %s, exiting\n", got == SIGTERM ? "SIGTERM" : "SIGINT");
  return 0;
}
