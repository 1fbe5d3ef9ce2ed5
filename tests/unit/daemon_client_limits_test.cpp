// SPDX-License-Identifier: Apache-2.0
// The client keeps to the request limit mlosd reads with: an oversized
// request is refused before it is sent, and the connection stays usable.
// The peer here is a stand-in that decodes requests as mlosd does
// (FrameDecoder{kMaxRequestPayload}, closing the connection on a malformed
// or oversized frame), so the test needs no daemon.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string>
#include <thread>

#include "mlos/errors.h"
#include "os/unix_socket.h"
#include "protocol/daemon_client.h"
#include "protocol/frame_codec.h"

namespace mlos::protocol {
namespace {

// Answers every request with {"id", "ok": true, "op": <its op>} until the
// client hangs up or sends a frame the decoder refuses (then it closes).
// The listener is non-blocking (as mlosd's is), so this waits for the
// client with poll: the thread may well run before the client connects.
void serve_one_client(int listen_fd) {
  pollfd ready{listen_fd, POLLIN, 0};
  while (poll(&ready, 1, 120000) < 0 && errno == EINTR) {
  }
  const int fd = accept(listen_fd, nullptr, nullptr);
  if (fd < 0) return;
  FrameDecoder decoder{kMaxRequestPayload};
  char buf[16384];
  for (bool open = true; open;) {
    auto frame = decoder.next();
    if (!frame) break;
    if (frame->has_value()) {
      auto request = parse_request(**frame);
      if (!request) break;
      nlohmann::json reply{{"id", request->id}, {"ok", true}, {"op", request->op}, {"protocol", kProtocolVersion}};
      open = os::send_all(fd, encode_frame(FrameKind::kReply, reply).value()).ok();
      continue;
    }
    auto n = os::recv_some(fd, buf, sizeof buf, nullptr);
    if (!n || *n == 0) break;
    decoder.feed(std::string_view(buf, *n));
  }
  close(fd);
}

TEST(DaemonClientLimitsTest, OversizedRequestIsRefusedBeforeSendingAndTheConnectionSurvives) {
  char dir[] = "/tmp/mlos-client-limits-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/s.sock";
  auto listener = os::listen_unix(path, 0600);
  ASSERT_TRUE(listener.ok()) << listener.error().describe();
  // Joined on every exit path: the client, declared after it, is closed
  // first, and the server then sees its end of the connection.
  std::jthread server(serve_one_client, listener->get());

  {
    // A generous timeout: the server is a thread of this test, and a busy
    // machine may starve it for seconds (no timing is judged here).
    auto client = DaemonClient::connect(path, 60000);
    ASSERT_TRUE(client.ok()) << client.error().describe();
    const std::string label(kMaxRequestPayload, 'x');  // with "op", "id" and quotes: over the limit
    auto big = client->call("request", nlohmann::json{{"label", label}});
    ASSERT_FALSE(big.ok());
    EXPECT_EQ(big.error().code, MLOS_ERR_INVALID_ARGUMENT) << big.error().describe();
    EXPECT_NE(big.error().message.find(std::to_string(kMaxRequestPayload)), std::string::npos)
        << big.error().message;
    // Nothing was sent, so the peer did not drop the connection.
    auto small = client->call("status");
    ASSERT_TRUE(small.ok()) << small.error().describe();
    EXPECT_EQ((*small)["op"], "status");
    // Just under the limit still goes through.
    const std::string fits(kMaxRequestPayload - 100, 'y');
    auto near = client->call("request", nlohmann::json{{"label", fits}});
    EXPECT_TRUE(near.ok()) << near.error().describe();
  }
  server.join();
  unlink(path.c_str());
  rmdir(dir);
}

TEST(DaemonClientLimitsTest, RequestLimitIsTheDocumentedOne) {
  // docs/protocol.md: requests at most 64 KiB, replies at most 1 MiB.
  EXPECT_EQ(kMaxRequestPayload, 64u * 1024);
  EXPECT_EQ(kMaxReplyPayload, 1u << 20);
}

}  // namespace
}  // namespace mlos::protocol
