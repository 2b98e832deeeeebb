// main() of the tests that program a kernel: re-executes the binary in a private network and
// mount namespace (unshare -m -n), so nothing they do touches the host's network and it all
// vanishes when they exit. Listing the tests (ctest's discovery) runs without it.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <unistd.h>

int main(int argc, char** argv) {
  bool listing = false;
  for (int i = 1; i < argc; ++i) {
    listing = listing || std::strncmp(argv[i], "--gtest_list_tests", 18) == 0;
  }
  if (!listing && std::getenv("EGW_IN_NETNS") == nullptr) {
    setenv("EGW_IN_NETNS", "1", 1);
    std::vector<char*> args{const_cast<char*>("unshare"), const_cast<char*>("-m"),
                            const_cast<char*>("-n"), const_cast<char*>("--")};
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
      return 2;
    }
    self[n] = '\0';
    args.push_back(self);
    for (int i = 1; i < argc; ++i) {
      args.push_back(argv[i]);
    }
    args.push_back(nullptr);
    execvp("unshare", args.data());
    std::perror("exec unshare");
    return 2;  // unshare is util-linux (hack/install-deps.sh); without it, fail loudly
  }
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
