// File: temp_dir.h
//
// A fresh directory under the system temp dir for one test, removed with everything in it when
// the TempDir goes away; write() puts a file in it (creating parent directories).
#pragma once

#include <filesystem>
#include <fstream>
#include <string>

#include <stdlib.h>

namespace egress::testutil {

class TempDir {
 public:
  // `prefix` names the directory ("kubeconfig_test" -> /tmp/kubeconfig_test.AbC123).
  explicit TempDir(const std::string& prefix = "egress_test") {
    std::string tmpl = (std::filesystem::temp_directory_path() / (prefix + ".XXXXXX")).string();
    if (::mkdtemp(tmpl.data()) != nullptr) {
      path_ = tmpl;
    }
  }
  ~TempDir() {
    if (!path_.empty()) {
      std::error_code ignored;
      std::filesystem::remove_all(path_, ignored);
    }
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  // "" if the directory could not be made.
  const std::string& path() const { return path_; }

  // Writes `contents` to `name` (relative to the directory) and returns the file's path.
  std::string write(const std::string& name, const std::string& contents) const {
    std::string p = path_ + "/" + name;
    std::filesystem::create_directories(std::filesystem::path(p).parent_path());
    std::ofstream(p, std::ios::binary | std::ios::trunc) << contents;
    return p;
  }

 private:
  std::string path_;
};

}  // namespace egress::testutil
