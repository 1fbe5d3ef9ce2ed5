// SPDX-License-Identifier: Apache-2.0
#include "collectives/group_config.h"

#include <charconv>
#include <cstring>

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

// MLOS_STORE's value into c->store and its fields.
Status parse_store(const char* value, GroupConfig* c) {
  if (!value || !*value) {
    return bad("no rendezvous store: set MLOS_STORE=file:/shared/dir (one host or a shared file system) or "
               "MLOS_STORE=redis://host:port (several hosts)");
  }
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
  return bad("MLOS_STORE=" + s + " is neither file:/dir nor redis://host:port");
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
                                      const std::function<const char*(const char*)>& getenv,
                                      std::shared_ptr<gloo::rendezvous::Store> caller_store,
                                      const GroupOverrides& overrides) {
  GroupConfig c;
  auto from_env = [&](const char* name, int given, int* out) -> Status {
    if (given >= 0) {
      *out = given;
      return Status::Ok();
    }
    const char* v = getenv(name);
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
  } else if (Status st = parse_store(getenv("MLOS_STORE"), &c); !st) {
    return st.error();
  }

  if (overrides.timeout.count() > 0) {
    c.timeout = overrides.timeout;
  } else if (const char* t = getenv("MLOS_COLLECTIVE_TIMEOUT_MS")) {
    long long ms = 0;
    if (!parse_int(t, 1, kMaxTimeoutMs, &ms)) {
      return bad(std::string("MLOS_COLLECTIVE_TIMEOUT_MS=\"") + t + "\" must be 1..3600000");
    }
    c.timeout = std::chrono::milliseconds(ms);
  }
  if (!overrides.prefix.empty()) {
    c.prefix = overrides.prefix;
  } else if (const char* g = getenv("MLOS_GROUP")) {
    c.prefix = g;
    if (!valid_prefix(c.prefix)) {
      return bad(std::string("MLOS_GROUP=\"") + g + "\" must be non-empty, without spaces or '/'");
    }
  }
  if (const char* h = getenv("MLOS_COLLECTIVE_HOST")) c.hostname = h;
  if (const char* i = getenv("MLOS_COLLECTIVE_IFACE")) c.iface = i;
  return c;
}

}  // namespace mlos::collectives
