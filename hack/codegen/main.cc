// egress-codegen: reads an API package's types.h and writes its generated files.
//
//   egress-codegen --input pkg/apis/networking/v1alpha1/types.h --root . --what code|crd
//       [--out DIR]
//
// --root is the repository (paths in the output are relative to it); --out (default: --root)
// is where files are written, so hack/verify-codegen.sh can generate into a temp dir and diff.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "hack/codegen/emit.h"
#include "hack/codegen/parser.h"

namespace {

int usage() {
  std::fprintf(stderr,
               "usage: egress-codegen --input TYPES_H --root REPO --what code|crd "
               "[--client-dir DIR] [--crd-dir DIR] [--out DIR]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string input;
  std::string root;
  std::string what;
  std::string out;
  std::string clientDir = "pkg/client/networking/v1alpha1";
  std::string crdDir = "manifests";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const std::string value = argv[i + 1];
    if (flag == "--input") {
      input = value;
    } else if (flag == "--root") {
      root = value;
    } else if (flag == "--what") {
      what = value;
    } else if (flag == "--out") {
      out = value;
    } else if (flag == "--client-dir") {
      clientDir = value;
    } else if (flag == "--crd-dir") {
      crdDir = value;
    } else {
      std::fprintf(stderr, "egress-codegen: unknown flag %s\n", flag.c_str());
      return usage();
    }
  }
  if (argc % 2 == 0 || input.empty() || root.empty() || (what != "code" && what != "crd")) {
    return usage();
  }
  if (out.empty()) {
    out = root;
  }
  namespace fs = std::filesystem;
  std::ifstream in(input);
  if (!in) {
    std::fprintf(stderr, "egress-codegen: cannot read %s\n", input.c_str());
    return 1;
  }
  std::stringstream text;
  text << in.rdbuf();
  const std::string rel = fs::relative(fs::absolute(input), fs::absolute(root)).generic_string();
  auto parsed = egress::codegen::parsePackage(text.str(), rel, rel);
  if (auto* err = std::get_if<egress::codegen::ParseError>(&parsed)) {
    std::fprintf(stderr, "egress-codegen: %s\n", err->message.c_str());
    return 1;
  }
  const auto& pkg = std::get<egress::codegen::Package>(parsed);
  egress::codegen::Files files;
  if (what == "code") {
    const std::string dir = rel.substr(0, rel.rfind('/'));
    files = egress::codegen::emitCodecs(pkg, dir);
    files.merge(egress::codegen::emitClient(pkg, clientDir));
  } else {
    files = egress::codegen::emitCrds(pkg, crdDir);
  }
  for (const auto& [path, contents] : files) {
    const fs::path target = fs::path(out) / path;
    fs::create_directories(target.parent_path());
    std::ofstream o(target, std::ios::binary | std::ios::trunc);
    o << contents;
    if (!o) {
      std::fprintf(stderr, "egress-codegen: cannot write %s\n", target.c_str());
      return 1;
    }
  }
  return 0;
}
