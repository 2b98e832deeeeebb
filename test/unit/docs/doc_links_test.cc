// The repository's documents stand on their own: every link in README.md and docs/ points at a
// file of the repository that exists (and, with an anchor, at a heading or anchor it has), and
// none leaves the repository (no URL, no path above its root). The checker is tested on small
// documents it must refuse before it is run on the real ones.
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace egress::docs {
namespace {

namespace fs = std::filesystem;

std::string readFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The lines of a Markdown text outside fenced code blocks, with inline code spans blanked: a
// path in code is not a link.
std::vector<std::string> proseLines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  bool fenced = false;
  for (std::string line; std::getline(in, line);) {
    const auto first = line.find_first_not_of(' ');
    if (first != std::string::npos &&
        (line.compare(first, 3, "```") == 0 || line.compare(first, 3, "~~~") == 0)) {
      fenced = !fenced;
      out.emplace_back();
      continue;
    }
    if (fenced) {
      out.emplace_back();
      continue;
    }
    static const std::regex kCode("`[^`]*`");
    out.push_back(std::regex_replace(line, kCode, "``"));
  }
  return out;
}

// GitHub's anchor for a heading: its text as rendered (no emphasis, code or link syntax),
// lower-cased, without punctuation but '-' and '_', spaces as '-'.
std::string slug(std::string heading) {
  static const std::regex kLink(R"(\[([^\]]*)\]\([^)]*\))");
  heading = std::regex_replace(heading, kLink, "$1");
  std::string out;
  for (unsigned char c : heading) {
    if (std::isalnum(c) != 0 || c == '-' || c == '_' || c >= 0x80) {
      out += static_cast<char>(std::tolower(c));
    } else if (c == ' ') {
      out += '-';
    }
  }
  return out;
}

// The anchors a Markdown file offers: its headings' (a repeated one gets -1, -2, ...) and any
// explicit <a name="..."> or id="...".
std::set<std::string> anchorsOf(const std::string& text) {
  std::set<std::string> out;
  std::map<std::string, int> seen;
  static const std::regex kHeading(R"(^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$)");
  static const std::regex kExplicit(R"re((?:name|id)="([^"]+)")re");
  std::istringstream in(text);
  bool fenced = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("```", 0) == 0 || line.rfind("~~~", 0) == 0) {
      fenced = !fenced;
      continue;
    }
    if (fenced) {
      continue;
    }
    std::smatch m;
    if (std::regex_match(line, m, kHeading)) {
      const std::string base = slug(m[1].str());
      const int n = seen[base]++;
      out.insert(n == 0 ? base : base + "-" + std::to_string(n));
    }
    for (auto it = std::sregex_iterator(line.begin(), line.end(), kExplicit);
         it != std::sregex_iterator(); ++it) {
      out.insert((*it)[1].str());
    }
  }
  return out;
}

// What is wrong with the links of `file` (a Markdown file below `root`), one line each.
std::vector<std::string> linkProblems(const fs::path& root, const fs::path& file) {
  std::vector<std::string> out;
  const std::string text = readFile(file);
  const std::string name = fs::relative(file, root).string();
  // [text](target "title"), ![alt](target), [id]: target, <scheme://...>, and a bare URL.
  static const std::regex kInline(R"(!?\[[^\]]*\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\))");
  static const std::regex kReference(R"(^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$)");
  static const std::regex kUrl(R"(\b(?:https?|ftp)://[^\s)>\]]+|\bmailto:[^\s)>\]]+)");
  const auto lines = proseLines(text);
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string where = name + ":" + std::to_string(i + 1) + ": ";
    std::vector<std::string> targets;
    for (auto it = std::sregex_iterator(lines[i].begin(), lines[i].end(), kInline);
         it != std::sregex_iterator(); ++it) {
      targets.push_back((*it)[1].str());
    }
    std::smatch m;
    if (std::regex_match(lines[i], m, kReference)) {
      targets.push_back(m[1].str());
    }
    std::set<std::string> urls;
    for (auto it = std::sregex_iterator(lines[i].begin(), lines[i].end(), kUrl);
         it != std::sregex_iterator(); ++it) {
      urls.insert((*it)[0].str());
    }
    for (const auto& u : urls) {
      out.push_back(where + u + " leaves the repository");
    }
    for (const auto& target : targets) {
      if (target.find("://") != std::string::npos || target.rfind("mailto:", 0) == 0) {
        continue;  // reported as a URL above
      }
      if (target.empty()) {
        out.push_back(where + "a link with no target");
        continue;
      }
      const auto hash = target.find('#');
      const std::string path = target.substr(0, hash);
      const std::string anchor = hash == std::string::npos ? "" : target.substr(hash + 1);
      const fs::path resolved =
          path.empty() ? file : (file.parent_path() / path).lexically_normal();
      const std::string inside = resolved.lexically_relative(root).string();
      if (inside.empty() || inside.rfind("..", 0) == 0) {
        out.push_back(where + target + " leaves the repository");
        continue;
      }
      if (!fs::exists(resolved)) {
        out.push_back(where + target + ": no such file " + inside);
        continue;
      }
      if (!anchor.empty()) {
        if (resolved.extension() != ".md") {
          out.push_back(where + target + ": an anchor into a file that is not Markdown");
        } else if (!anchorsOf(readFile(resolved)).contains(anchor)) {
          out.push_back(where + target + ": " + inside + " has no heading or anchor #" + anchor);
        }
      }
    }
  }
  return out;
}

// The documents a user reads: README.md and every Markdown file below docs/.
std::vector<fs::path> documents(const fs::path& root) {
  std::vector<fs::path> out{root / "README.md"};
  if (fs::exists(root / "docs")) {
    for (const auto& e : fs::recursive_directory_iterator(root / "docs")) {
      if (e.is_regular_file() && e.path().extension() == ".md") {
        out.push_back(e.path());
      }
    }
  }
  return out;
}

class ScratchRepo : public ::testing::Test {
 protected:
  ScratchRepo() {
    root_ = fs::temp_directory_path() /
            ("doc-links-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
             "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_ / "docs");
  }
  ~ScratchRepo() override { fs::remove_all(root_); }

  void write(const std::string& name, const std::string& text) {
    std::ofstream(root_ / name) << text;
  }
  std::vector<std::string> problems(const std::string& name) {
    return linkProblems(root_, root_ / name);
  }

  fs::path root_;
};

TEST_F(ScratchRepo, GoodLinksPass) {
  write("docs/guide.md",
        "# Guide\n\n## Metrics and alerts\n\n## The `make demo` target\n\n## Setup\n\n## Setup\n"
        "<a name=\"explicit\"></a>\n");
  write("README.md",
        "# R\n\n## Fuzzing (seeded)\n\nSee [the guide](docs/guide.md), "
        "[alerts](docs/guide.md#metrics-and-alerts), [demo](docs/guide.md#the-make-demo-target), "
        "[second setup](docs/guide.md#setup-1), [explicit](docs/guide.md#explicit), "
        "[here](#fuzzing-seeded) and ![chart](docs/guide.md).\n\n"
        "```\nhttp://in.a.code.block/is-not-a-link\n```\n"
        "A path in code is not a link: `[x](../outside.md)`.\n");
  EXPECT_THAT(problems("README.md"), ::testing::IsEmpty());
}

TEST_F(ScratchRepo, EveryKindOfBadLinkIsReported) {
  write("docs/guide.md", "# Guide\n");
  write("README.md",
        "[design](../shared/DESIGN.md)\n"
        "[issue](https://example.invalid/issues/1)\n"
        "a bare http://example.invalid/page in prose\n"
        "[gone](docs/missing.md)\n"
        "[anchor](docs/guide.md#no-such-heading)\n"
        "[self](#nowhere)\n"
        "[ref]: docs/also-missing.md\n");
  EXPECT_THAT(
      problems("README.md"),
      ::testing::ElementsAre(
          "README.md:1: ../shared/DESIGN.md leaves the repository",
          "README.md:2: https://example.invalid/issues/1 leaves the repository",
          "README.md:3: http://example.invalid/page leaves the repository",
          "README.md:4: docs/missing.md: no such file docs/missing.md",
          "README.md:5: docs/guide.md#no-such-heading: docs/guide.md has no heading or anchor "
          "#no-such-heading",
          "README.md:6: #nowhere: README.md has no heading or anchor #nowhere",
          "README.md:7: docs/also-missing.md: no such file docs/also-missing.md"));
}

// The real documents: README.md and docs/.
TEST(DocLinks, EveryLinkInTheReadmeAndDocsStaysInTheRepositoryAndResolves) {
  const fs::path root = EGRESS_SOURCE_DIR;
  std::vector<std::string> all;
  for (const auto& doc : documents(root)) {
    auto p = linkProblems(root, doc);
    all.insert(all.end(), p.begin(), p.end());
  }
  EXPECT_THAT(all, ::testing::IsEmpty());
}

}  // namespace
}  // namespace egress::docs
