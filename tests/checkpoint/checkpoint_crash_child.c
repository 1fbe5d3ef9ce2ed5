// SPDX-License-Identifier: Apache-2.0
/* The crash test's victim: saves checkpoints in a loop through the public C
 * API (compiled as strict C11) until it is killed. After each save has
 * returned MLOS_OK (sync) or been waited for (async), it writes the
 * sequence, 8 bytes, to stdout (a pipe to the parent); a 0 first says the
 * writer is open.
 * Usage: mlos_checkpoint_crash_child DIR sync|async
 * Exit codes: 2 usage, 3 open failed, 4 a save failed, 5 pipe gone. */
#include <mlos/checkpoint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "crash_payload.h"

static void acknowledge(uint64_t sequence) {
  if (write(STDOUT_FILENO, &sequence, sizeof sequence) != (ssize_t)sizeof sequence) exit(5);
}

int main(int argc, char** argv) {
  mlos_checkpoint_options_t options;
  mlos_checkpoint_writer_t* writer = NULL;
  mlos_checkpoint_writer_info_t info;
  unsigned char* buf;
  uint64_t next;
  int async_mode;
  if (argc != 3 || (strcmp(argv[2], "sync") != 0 && strcmp(argv[2], "async") != 0)) return 2;
  async_mode = strcmp(argv[2], "async") == 0;
  memset(&options, 0, sizeof options);
  options.struct_size = sizeof options;
  options.prefix = "crash";
  options.keep_last = 3;
  if (mlos_checkpoint_writer_open(argv[1], &options, &writer) != MLOS_OK) {
    fprintf(stderr, "open: %s\n", mlos_last_error_message());
    return 3;
  }
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  if (mlos_checkpoint_writer_get_info(writer, &info) != MLOS_OK) return 3;
  next = info.next_sequence;
  acknowledge(0);
  buf = malloc(CRASH_MAX_SIZE);
  if (buf == NULL) return 3;
  crash_fill_payload(next, buf);
  for (;;) {
    uint64_t got = 0;
    int rc;
    if (async_mode) {
      rc = mlos_checkpoint_save_async(writer, buf, crash_payload_size(next), &got);
      if (rc == MLOS_OK) {
        /* The buffer is the caller's again: overwrite it with the next
         * payload while the save is in flight. */
        crash_fill_payload(next + 1, buf);
        rc = mlos_checkpoint_wait(writer, got, -1);
      }
    } else {
      rc = mlos_checkpoint_save(writer, buf, crash_payload_size(next), &got);
      if (rc == MLOS_OK) crash_fill_payload(next + 1, buf);
    }
    if (rc != MLOS_OK || got != next) {
      fprintf(stderr, "save %llu: %s (%s)\n", (unsigned long long)next, mlos_strerror(rc),
              mlos_last_error_message());
      return 4;
    }
    acknowledge(got);
    ++next;
  }
}
