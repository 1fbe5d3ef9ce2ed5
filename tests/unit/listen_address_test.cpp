// SPDX-License-Identifier: Apache-2.0
// parse_listen_address: the forms civetweb can serve, and the typos it
// would only report as "null context" when mlosd starts.
#include "daemon/listen_address.h"

#include <gtest/gtest.h>

namespace mlos::daemon {
namespace {

void expect_address(const std::string& text, const std::string& host, int port) {
  auto a = parse_listen_address(text);
  ASSERT_TRUE(a) << text << ": " << a.error().message;
  EXPECT_EQ(a->host, host) << text;
  EXPECT_EQ(a->port, port) << text;
}

TEST(ListenAddressTest, PortHostAndBracketedIpv6) {
  expect_address("9464", "", 9464);
  expect_address("0", "", 0);
  expect_address("127.0.0.1:9464", "127.0.0.1", 9464);
  expect_address("0.0.0.0:65535", "0.0.0.0", 65535);
  expect_address("localhost:0", "localhost", 0);
  expect_address("node-7.cluster.local:9464", "node-7.cluster.local", 9464);
  expect_address("[::1]:9464", "[::1]", 9464);
  expect_address("[fe80::1:2]:1", "[fe80::1:2]", 1);
}

TEST(ListenAddressTest, TyposAreRefusedNamingTheForms) {
  for (const std::string bad : {"", ":9464", "127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:09464", "127.0.0.1:9464s",
                                "1.2.3:9464", "256.0.0.1:9464", "::1:9464", "[::1]", "[::g]:9464", "[]:9464",
                                "http://127.0.0.1:9464", "127.0.0.1:9464,9465", "-host:1", "a b:1", "+9464",
                                "127.0.0.1:-1", "99999999999"}) {
    auto a = parse_listen_address(bad);
    ASSERT_FALSE(a) << "accepted \"" << bad << "\"";
    EXPECT_EQ(a.error().code, MLOS_ERR_INVALID_ARGUMENT);
    EXPECT_NE(a.error().message.find("HOST:PORT"), std::string::npos) << a.error().message;
  }
}

}  // namespace
}  // namespace mlos::daemon
