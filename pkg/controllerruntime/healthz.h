// File: healthz.h
//
// controller-runtime's healthz.Handler: a set of named checks served as one probe endpoint
// (/healthz for liveness, /readyz for readiness), with its exact answers:
//   GET /readyz                 200 "ok" when every check passes; 500 with one line per check
//                               ("[+]informers ok", "[-]leader failed: reason withheld") and
//                               "healthz check failed" when one fails (a public endpoint never
//                               shows the reason)
//   GET /readyz?verbose         the per-check lines also on success, then "healthz check passed"
//   GET /readyz?exclude=leader  skips that check ("[+]leader excluded: ok"); an exclude that
//                               matches no check is reported on a "warn:" line
//   GET /readyz/<check>         that check alone: 200 "ok", or 500 "internal server error:
//                               <reason>"; 404 for a check that does not exist
//   GET /readyz/ping            "ok" while no check is registered (the endpoint then only says
//                               that the event loop answers)
//
//   HealthChecks readiness;
//   readiness.add("informers", [&] { return synced ? ok() : failure("not synced"); });
//   server.handleTree("/readyz", readiness.handler());
#pragma once

#include <functional>
#include <map>
#include <string>

#include "pkg/base/result.h"
#include "pkg/controllerruntime/http_server.h"

namespace egress::controllerruntime {

// A check's verdict: Ok, or why it failed.
using CheckResult = Result<Ok, std::string>;
using HealthCheck = std::function<CheckResult()>;

class HealthChecks {
 public:
  // Refuses an empty name, a name with '/' (it could not be probed on its own sub-path) and a
  // name already taken. (controller-runtime silently replaces a check of the same name; two
  // components registering one name is a bug better reported than hidden.)
  Result<Ok, std::string> add(const std::string& name, HealthCheck check);

  // Answers one request on the endpoint; request.subPath selects the aggregate ("" or "/") or
  // one check ("/<name>").
  HttpResponse serve(const HttpRequest& request) const;
  // serve() as an HttpHandler; this object must outlive the server.
  HttpHandler handler() const;

 private:
  HttpResponse serveAggregated(const HttpRequest& request) const;

  std::map<std::string, HealthCheck> checks_;
};

}  // namespace egress::controllerruntime
