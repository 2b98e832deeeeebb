#include "pkg/controllerruntime/healthz.h"

#include <exception>
#include <set>
#include <vector>

#include <spdlog/spdlog.h>

namespace egress::controllerruntime {

namespace {

// Go's path.Clean for a rooted path: no empty, "." or ".." elements and no trailing slash.
std::string cleanPath(const std::string& path) {
  std::vector<std::string> elements;
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t end = path.find('/', start);
    if (end == std::string::npos) {
      end = path.size();
    }
    const std::string element = path.substr(start, end - start);
    if (element == "..") {
      if (!elements.empty()) {
        elements.pop_back();
      }
    } else if (!element.empty() && element != ".") {
      elements.push_back(element);
    }
    start = end + 1;
  }
  std::string out;
  for (const auto& element : elements) {
    out += "/" + element;
  }
  return out.empty() ? "/" : out;
}

// A check that throws has failed; it must not fail the whole endpoint.
CheckResult run(const std::string& name, const HealthCheck& check) {
  try {
    return check();
  } catch (const std::exception& e) {
    return unexpected("check " + name + " threw: " + e.what());
  }
}

HttpResponse okResponse() {
  HttpResponse response;
  response.body = "ok";
  return response;
}

}  // namespace

Result<Ok, std::string> HealthChecks::add(const std::string& name, HealthCheck check) {
  if (name.empty() || name.find('/') != std::string::npos) {
    return "health check name \"" + name + "\" must be non-empty and without '/'";
  }
  if (!check) {
    return "health check \"" + name + "\" has no function";
  }
  if (!checks_.emplace(name, std::move(check)).second) {
    return "health check \"" + name + "\" is already registered";
  }
  return Ok{};
}

HttpResponse HealthChecks::serve(const HttpRequest& request) const {
  const std::string path = cleanPath(request.subPath);
  if (path == "/") {
    return serveAggregated(request);
  }
  const std::string name = path.substr(1);
  if (checks_.empty() && name == "ping") {
    return okResponse();
  }
  const auto it = checks_.find(name);
  if (it == checks_.end()) {
    return httpError(404, "404 page not found");
  }
  // One check by name answers with its reason: controller-runtime does, for whoever may reach
  // the sub-path; only the aggregate withholds it.
  if (auto result = run(name, it->second); !result) {
    return httpError(500, "internal server error: " + result.error());
  }
  return okResponse();
}

HttpResponse HealthChecks::serveAggregated(const HttpRequest& request) const {
  std::set<std::string> excludes;
  for (auto [it, end] = request.query.equal_range("exclude"); it != end; ++it) {
    excludes.insert(it->second);
  }
  // checks_ is ordered, so the lines come sorted by name as controller-runtime sorts them.
  std::string lines;
  bool failed = false;
  for (const auto& [name, check] : checks_) {
    if (excludes.erase(name) != 0) {
      lines += "[+]" + name + " excluded: ok\n";
      continue;
    }
    if (auto result = run(name, check); !result) {
      spdlog::debug("healthz check {} failed: {}", name, result.error());
      lines += "[-]" + name + " failed: reason withheld\n";
      failed = true;
    } else {
      lines += "[+]" + name + " ok\n";
    }
  }
  if (checks_.empty()) {
    lines += "[+]ping ok\n";
  }

  HttpResponse response;
  response.status = failed ? 500 : 200;
  response.headers.emplace_back("X-Content-Type-Options", "nosniff");
  if (!failed && !request.hasQuery("verbose")) {
    response.body = "ok";
    return response;
  }
  response.body = std::move(lines);
  // What is left of the excludes matched no check.
  if (!excludes.empty()) {
    std::string quoted;
    for (const auto& name : excludes) {
      quoted += (quoted.empty() ? "\"" : ",\"") + name + "\"";
    }
    response.body += "warn: some health checks cannot be excluded: no matches for " + quoted + "\n";
  }
  response.body += failed ? "healthz check failed\n" : "healthz check passed\n";
  return response;
}

HttpHandler HealthChecks::handler() const {
  return [this](const HttpRequest& request) { return serve(request); };
}

}  // namespace egress::controllerruntime
