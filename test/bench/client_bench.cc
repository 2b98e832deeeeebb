// client_bench: decode throughput of a large pod list and of a watch stream, GETs per second
// over one pooled connection, and the time to LIST every pod with and without gzip, against a
// live API server.
//
//   client_bench --kubeconfig K --namespace bench [--gets 2000] [--lists 5]
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "pkg/apis/core/pod.h"
#include "pkg/cli/flag_set.h"
#include "pkg/kube/watch_decoder.h"
#include "test/bench/bench_util.h"
#include "test/testutil/run_sync.h"
#include <zlib.h>

namespace egress::bench {

// What the API server's gzip (level 1, its defaultGzipContentEncodingLevel) makes of `data`.
size_t gzippedSize(const std::string& data) {
  z_stream z{};
  if (deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    return 0;
  }
  std::string out(deflateBound(&z, data.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  const size_t size = z.total_out;
  deflateEnd(&z);
  return size;
}

}  // namespace egress::bench

int main(int argc, char** argv) {
  using namespace egress;
  cli::FlagSet flags("client_bench");
  std::string kubeconfig;
  std::string ns = "bench";
  int64_t gets = 2000;
  int64_t lists = 5;
  bool help = false;
  flags.addString("kubeconfig", kubeconfig, "Path to a kubeconfig.");
  flags.addString("namespace", ns, "Namespace holding the pods to list (empty: every namespace).");
  flags.addInt("gets", gets, "Sequential GETs of one pod to time.");
  flags.addInt("lists", lists, "LISTs of every pod to time, with gzip and without.");
  flags.addBool("help", help, "Print this help.");
  if (auto err = flags.parse(argc, argv); !err.empty() || help) {
    std::fprintf(help ? stdout : stderr, "%s\n%s", err.c_str(), flags.usage().c_str());
    return help ? 0 : 2;
  }
  boost::asio::io_context ioc;
  auto client = bench::makeClient(ioc, kubeconfig);
  if (!client) {
    return 1;
  }

  // 1. The list as raw bytes, then parse + typed decode, timed apart from the network.
  const std::string podsPath = ns.empty() ? "/api/v1/pods" : "/api/v1/namespaces/" + ns + "/pods";
  auto raw = testutil::runSync(ioc, client->raw("GET", podsPath + "?resourceVersion=0"));
  if (!raw || raw->status != 200) {
    std::fprintf(stderr, "list failed\n");
    return 1;
  }
  const std::string& body = raw->body;
  auto start = std::chrono::steady_clock::now();
  rapidjson::Document doc;
  doc.Parse(body.data(), body.size());
  size_t pods = 0;
  for (const auto& item : doc["items"].GetArray()) {
    if (core::decodePod(item)) {
      ++pods;
    }
  }
  double secs = bench::secondsSince(start);
  std::printf("list_decode bytes=%zu pods=%zu seconds=%.3f MB_per_s=%.1f objects_per_s=%.0f\n",
              body.size(), pods, secs, body.size() / 1e6 / secs, pods / secs);

  // 2. The same pods as a watch stream (one ADDED line each), fed in 16 KiB reads.
  std::string stream;
  for (const auto& item : doc["items"].GetArray()) {
    rapidjson::StringBuffer buf;
    rapidjson::Writer<rapidjson::StringBuffer> w(buf);
    item.Accept(w);
    stream += R"({"type":"ADDED","object":)";
    stream.append(buf.GetString(), buf.GetSize());
    stream += "}\n";
  }
  start = std::chrono::steady_clock::now();
  kube::WatchDecoder decoder;
  std::vector<kube::WatchEvent> events;
  size_t decoded = 0;
  for (size_t off = 0; off < stream.size(); off += 16384) {
    events.clear();
    if (!decoder.feed(std::string_view(stream).substr(off, 16384), events)) {
      std::fprintf(stderr, "watch decode failed\n");
      return 1;
    }
    for (const auto& e : events) {
      if (core::decodePod(e.object())) {
        ++decoded;
      }
    }
  }
  secs = bench::secondsSince(start);
  std::printf("watch_decode bytes=%zu events=%zu seconds=%.3f MB_per_s=%.1f events_per_s=%.0f\n",
              stream.size(), decoded, secs, stream.size() / 1e6 / secs, decoded / secs);

  // 3. GETs of one pod over one keep-alive connection.
  if (pods > 0) {
    const std::string name = doc["items"][0]["metadata"]["name"].GetString();
    const std::string podNs = doc["items"][0]["metadata"]["namespace"].GetString();
    start = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < gets; ++i) {
      auto r = testutil::runSync(ioc, client->get(bench::kPods, podNs, name));
      if (!r) {
        std::fprintf(stderr, "get: %s\n", r.error().message().c_str());
        return 1;
      }
    }
    secs = bench::secondsSince(start);
    std::printf("get_one_pod requests=%lld seconds=%.3f requests_per_s=%.0f\n",
                static_cast<long long>(gets), secs, gets / secs);
  }

  // 4. The LIST an informer starts with (resourceVersion=0, from the watch cache), timed from
  //    the request to the parsed document, with Accept-Encoding: gzip and without
  //    (RestConfig::disableCompression). The two alternate, so that drift in the machine's load
  //    falls on both.
  std::printf("list_bytes uncompressed=%zu gzip_level1=%zu\n", body.size(),
              bench::gzippedSize(body));
  struct Mode {
    bool gzip;
    std::unique_ptr<kube::RestClient> client;
    std::vector<double> seconds;
    bool serverCompressed = false;
  };
  std::vector<Mode> modes;
  for (const bool gzip : {true, false}) {
    modes.push_back({gzip, bench::makeClient(ioc, kubeconfig, gzip), {}, false});
    if (!modes.back().client) {
      return 1;
    }
  }
  kube::ListOptions opts;
  opts.resourceVersion = "0";
  opts.limit = 500;
  for (int64_t i = 0; i <= lists; ++i) {  // the first round warms the connections up
    for (auto& mode : modes) {
      start = std::chrono::steady_clock::now();
      auto list = testutil::runSync(ioc, mode.client->list(bench::kPods, ns, opts));
      if (!list) {
        std::fprintf(stderr, "list: %s\n", list.error().message().c_str());
        return 1;
      }
      if (i > 0) {
        mode.seconds.push_back(bench::secondsSince(start));
      }
    }
  }
  for (auto& mode : modes) {
    auto probe = testutil::runSync(ioc, mode.client->raw("GET", podsPath + "?resourceVersion=0"));
    mode.serverCompressed = probe && probe->decompressed;
    auto& t = mode.seconds;
    std::sort(t.begin(), t.end());
    std::printf("list_all_pods gzip=%s server_compressed=%s runs=%zu median_s=%.3f min_s=%.3f\n",
                mode.gzip ? "on" : "off", mode.serverCompressed ? "yes" : "no", t.size(),
                t[t.size() / 2], t.front());
  }
  return 0;
}
