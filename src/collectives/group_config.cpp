// SPDX-License-Identifier: Apache-2.0
#include "collectives/group_config.h"

#include <strings.h>

#include <algorithm>
#include <charconv>
#include <cstring>

#include "collectives/tcp_store.h"

namespace mlos::collectives {

namespace {

Error bad(const std::string& what) { return make_error(MLOS_ERR_INVALID_ARGUMENT, what); }

bool parse_int(const std::string& text, long long lo, long long hi, long long* out) {
  const char* b = text.data();
  const char* e = b + text.size();
  auto [p, ec] = std::from_chars(b, e, *out);
  return ec == std::errc() && p == e && p != b && *out >= lo && *out <= hi;
}

constexpr long long kMaxTimeoutMs = 3600000;

bool valid_prefix(const std::string& p) { return !p.empty() && p.find_first_of(" /\n") == std::string::npos; }

// "host:port" or "[v6addr]:port" of tcp://, into c->tcp_host/tcp_port.
Status parse_tcp(const std::string& s, const std::string& hostport, GroupConfig* c) {
  std::string host, port;
  if (!hostport.empty() && hostport[0] == '[') {
    const auto close = hostport.find(']');
    if (close == std::string::npos) return bad("MLOS_STORE=" + s + ": '[' without ']'");
    host = hostport.substr(1, close - 1);
    if (close + 1 >= hostport.size() || hostport[close + 1] != ':') return bad("MLOS_STORE=" + s + ": no port");
    port = hostport.substr(close + 2);
  } else {
    const auto colon = hostport.rfind(':');
    if (colon == std::string::npos) return bad("MLOS_STORE=" + s + ": no port (tcp://host:port)");
    host = hostport.substr(0, colon);
    port = hostport.substr(colon + 1);
    if (host.find(':') != std::string::npos) return bad("MLOS_STORE=" + s + ": an IPv6 address goes in brackets");
  }
  if (host.empty()) return bad("MLOS_STORE=" + s + ": no host");
  long long p = 0;
  if (!parse_int(port, 1, 65535, &p)) return bad("MLOS_STORE=" + s + ": bad port");
  c->store = GroupConfig::StoreKind::kTcp;
  c->tcp_host = host;
  c->tcp_port = static_cast<int>(p);
  return Status::Ok();
}

// Without MLOS_STORE: torch's env:// convention, a TCPStore at
// MASTER_ADDR:MASTER_PORT.
Status parse_master_address(const std::function<const char*(const char*)>& env, GroupConfig* c) {
  const char* addr = env("MASTER_ADDR");
  const char* port = env("MASTER_PORT");
  const bool has_addr = addr && *addr, has_port = port && *port;
  if (!has_addr && !has_port) {
    return bad("no rendezvous store: set MLOS_STORE=file:/shared/dir (one host or a shared file system), "
               "MLOS_STORE=redis://host:port or MLOS_STORE=tcp://host:port (torch's TCPStore), or MASTER_ADDR "
               "and MASTER_PORT as torchrun does");
  }
  if (!has_addr || !has_port) {
    const std::string which = has_addr ? "MASTER_ADDR is set but MASTER_PORT is not"
                                       : "MASTER_PORT is set but MASTER_ADDR is not";
    return bad(which + ": a TCPStore rendezvous needs both (or set MLOS_STORE)");
  }
  long long p = 0;
  if (!parse_int(port, 1, 65535, &p)) return bad(std::string("MASTER_PORT=\"") + port + "\" is not a port (1..65535)");
  std::string host = addr;
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  c->store = GroupConfig::StoreKind::kTcp;
  c->tcp_host = host;
  c->tcp_port = static_cast<int>(p);
  return Status::Ok();
}

// MLOS_STORE's value (or the MASTER_ADDR fallback) into c->store and its
// fields.
Status parse_store(const char* value, const std::function<const char*(const char*)>& env, GroupConfig* c) {
  if (!value || !*value) return parse_master_address(env, c);
  const std::string s = value;
  if (s.rfind("file:", 0) == 0) {
    c->store = GroupConfig::StoreKind::kFile;
    c->store_path = s.substr(5);
    if (c->store_path.empty() || c->store_path[0] != '/') {
      return bad("MLOS_STORE=" + s + ": the directory must be absolute");
    }
    return Status::Ok();
  }
  if (s.rfind("redis://", 0) == 0) {
    c->store = GroupConfig::StoreKind::kRedis;
    std::string hostport = s.substr(8);
    const auto colon = hostport.rfind(':');
    c->redis_host = hostport.substr(0, colon);
    if (colon != std::string::npos) {
      long long port = 0;
      if (!parse_int(hostport.substr(colon + 1), 1, 65535, &port)) return bad("MLOS_STORE=" + s + ": bad port");
      c->redis_port = static_cast<int>(port);
    }
    if (c->redis_host.empty()) return bad("MLOS_STORE=" + s + ": no host");
    return Status::Ok();
  }
  if (s.rfind("tcp://", 0) == 0) return parse_tcp(s, s.substr(6), c);
  return bad("MLOS_STORE=" + s + " is none of file:/dir, redis://host:port and tcp://host:port");
}

// Who serves a TCPStore that does not answer yet. torch's env:// and
// tcp:// make rank 0 the server; under torchrun the agent already serves
// it at MASTER_ADDR:MASTER_PORT and tells its workers with
// TORCHELASTIC_USE_AGENT_STORE=True, and a rank 0 that served too would
// take the agent's port. torch reads the variable as "True" (Python) or as
// a boolean (C++: 1/true/TRUE); any of them counts here, as in
// mlos_training.distributed. Any rank may start before the server
// listens: the others retry until the timeout.
bool agent_serves_store(const std::function<const char*(const char*)>& env) {
  const char* agent = env("TORCHELASTIC_USE_AGENT_STORE");
  return agent && (strcasecmp(agent, "true") == 0 || std::strcmp(agent, "1") == 0);
}

bool may_serve_tcp_store(const GroupConfig& c, const std::function<const char*(const char*)>& env) {
  return c.rank == 0 && !agent_serves_store(env);
}

// MLOS_STORE_SECRET: for a TCPStore, which our server (or one of ours that
// another rank 0 started) checks; a store of another kind does not use it.
Status parse_secret(const std::function<const char*(const char*)>& env, GroupConfig* c) {
  const char* s = env("MLOS_STORE_SECRET");
  if (!s || !*s) return Status::Ok();
  const std::string secret = s;
  const bool printable = std::all_of(secret.begin(), secret.end(), [](char ch) { return ch > ' ' && ch < 127; });
  if (secret.size() < tcpstore::kMinSecretBytes || secret.size() > tcpstore::kMaxSecretBytes || !printable) {
    return bad("MLOS_STORE_SECRET must be " + std::to_string(tcpstore::kMinSecretBytes) + " to " +
               std::to_string(tcpstore::kMaxSecretBytes) + " printable characters without spaces (it has " +
               std::to_string(secret.size()) + ")");
  }
  if (c->store != GroupConfig::StoreKind::kTcp) return Status::Ok();  // not ours to protect: unused
  if (agent_serves_store(env)) {
    return bad("MLOS_STORE_SECRET is set, but torchrun's agent serves this store (torch's own, which takes no "
               "secret; unset it under torchrun)");
  }
  c->tcp_secret = secret;
  return Status::Ok();
}

}  // namespace

Status validate(const GroupOverrides& o) {
  if (o.timeout.count() < 0 || o.timeout.count() > kMaxTimeoutMs) {
    return bad("timeout_ms " + std::to_string(o.timeout.count()) + " is outside 0..3600000");
  }
  if (!o.prefix.empty() && !valid_prefix(o.prefix)) return bad("group \"" + o.prefix + "\" has spaces or '/'");
  return Status::Ok();
}

Result<GroupConfig> group_config_from(int rank, int world_size,
                                      const std::function<const char*(const char*)>& env,
                                      std::shared_ptr<gloo::rendezvous::Store> caller_store,
                                      const GroupOverrides& overrides) {
  GroupConfig c;
  auto from_env = [&](const char* name, int given, int* out) -> Status {
    if (given >= 0) {
      *out = given;
      return Status::Ok();
    }
    const char* v = env(name);
    long long x = 0;
    if (!v) return bad(std::string(name) + " is not set and the call gave no value");
    if (!parse_int(v, 0, 1 << 20, &x)) return bad(std::string(name) + "=\"" + v + "\" is not a valid number");
    *out = static_cast<int>(x);
    return Status::Ok();
  };
  if (Status s = from_env("WORLD_SIZE", world_size, &c.world_size); !s) return s.error();
  if (Status s = from_env("RANK", rank, &c.rank); !s) return s.error();
  if (c.world_size < 1) return bad("world_size must be >= 1");
  if (c.rank >= c.world_size) {
    return bad("rank " + std::to_string(c.rank) + " is not below world_size " + std::to_string(c.world_size));
  }

  if (caller_store) {
    c.store = GroupConfig::StoreKind::kCaller;
    c.caller_store = std::move(caller_store);
  } else if (Status st = parse_store(env("MLOS_STORE"), env, &c); !st) {
    return st.error();
  }
  if (c.store == GroupConfig::StoreKind::kTcp) c.tcp_may_serve = may_serve_tcp_store(c, env);
  if (Status st = parse_secret(env, &c); !st) return st.error();

  if (overrides.timeout.count() > 0) {
    c.timeout = overrides.timeout;
  } else if (const char* t = env("MLOS_COLLECTIVE_TIMEOUT_MS")) {
    long long ms = 0;
    if (!parse_int(t, 1, kMaxTimeoutMs, &ms)) {
      return bad(std::string("MLOS_COLLECTIVE_TIMEOUT_MS=\"") + t + "\" must be 1..3600000");
    }
    c.timeout = std::chrono::milliseconds(ms);
  }
  if (!overrides.prefix.empty()) {
    c.prefix = overrides.prefix;
  } else if (const char* g = env("MLOS_GROUP")) {
    c.prefix = g;
    if (!valid_prefix(c.prefix)) {
      return bad(std::string("MLOS_GROUP=\"") + g + "\" must be non-empty, without spaces or '/'");
    }
  }
  if (c.store == GroupConfig::StoreKind::kTcp && overrides.prefix.empty() && !env("MLOS_GROUP")) {
    if (const char* restarts = env("TORCHELASTIC_RESTART_COUNT")) {
      long long n = 0;
      if (!parse_int(restarts, 0, 1 << 30, &n)) {
        return bad(std::string("TORCHELASTIC_RESTART_COUNT=\"") + restarts + "\" is not a valid number");
      }
      if (n > 0) c.prefix += ".restart" + std::to_string(n);
    }
  }
  if (const char* h = env("MLOS_COLLECTIVE_HOST")) c.hostname = h;
  if (const char* i = env("MLOS_COLLECTIVE_IFACE")) c.iface = i;
  return c;
}

}  // namespace mlos::collectives
