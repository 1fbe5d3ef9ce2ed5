// SPDX-License-Identifier: Apache-2.0
/* One rank of a collective test, on the published API only.
 *   mlos_collective_rank check   every op (SUM, PROD, MIN, MAX, AVG) over
 *                                sizes 0, 1, 7, 1000, 65537; prints per case
 *                                {"op":N,"count":N,"sum":X,"first":[...],"last":X}
 *   mlos_collective_rank typed   mlos_training_allreduce_typed for every
 *                                dtype and op over sizes 0, 1, 7, 1000;
 *                                prints {"dtype":N,"op":N,"count":N,"sum":X,
 *                                "first":[...]} with values as doubles
 *   mlos_collective_rank device  as typed, on buffers in GPU memory: the
 *                                CUDA driver (libcuda.so.1, the tests' fake
 *                                one) is loaded, device 0 (of
 *                                CUDA_VISIBLE_DEVICES) made current, and each
 *                                buffer copied to the device before the call
 *                                and back after it; then, when
 *                                COLLECTIVE_LARGE_FLOATS is set, one float32
 *                                SUM of that many elements, printed as
 *                                {"case":"large","count":N,"first":X,"last":X}
 *   mlos_collective_rank moves   mlos_training_broadcast from every root and
 *                                mlos_training_allgather (input apart, and
 *                                in place) over 0, 1, 13 and 300000 bytes,
 *                                byte i of rank r being (31 r + i) mod 256;
 *                                prints {"op":"broadcast"|"allgather"|
 *                                "allgather_in_place","root":N,"bytes":N,
 *                                "fnv":"<FNV-1a 64 of what this rank holds>"};
 *                                then mlos_training_alltoall with uneven
 *                                chunks (rank r sends n + r + 2 i bytes,
 *                                (31 r + 7 i + k) mod 256, to rank i; none
 *                                when n is 0), checked here, printed as
 *                                {"op":"alltoall","bytes":N,"checked":B};
 *                                then mlos_training_gather to and
 *                                mlos_training_scatter from every root,
 *                                checked here, printed as {"op":"gather"|
 *                                "scatter","root":N,"bytes":N,"checked":B}
 *   mlos_collective_rank transfers  point-to-point: a ring (each rank
 *                                receives from rank - 1, posted first, and
 *                                sends to rank + 1) over 0, 1, 13 and 300000
 *                                bytes of chunk bytes, checked here, printed
 *                                as {"op":"ring","bytes":N,"peer":N,
 *                                "checked":B}; then between ranks 0 and 1:
 *                                three sends of one tag arrive in posting
 *                                order ({"op":"ordered","checked":B}); a
 *                                receive from any rank reports its sender
 *                                ({"op":"any_source","peer":N}); a send
 *                                posted and completed while an all-reduce of
 *                                the same handle waits on another thread for
 *                                the peer, which receives before it joins the
 *                                all-reduce ({"op":"beside_collective",
 *                                "checked":B}); the refusals of bad
 *                                arguments ({"op":"refusals","checked":B})
 *   mlos_collective_rank placement  without binding this thread, joins the
 *                                group, all-reduces 1000 floats 3 times, and
 *                                prints {"cpus":"...","threads":[{"tid":N,
 *                                "allowed":"..."}],"profile":{...}}: the
 *                                allocation, the threads the group started
 *                                with their Cpus_allowed_list, and the
 *                                communication part of the phase profile
 *   mlos_collective_rank loop    all-reduces 1000 floats until one fails;
 *                                prints {"event":"ready"} after the first and
 *                                {"event":"error","code":N,"t_ns":T,...} at the end
 * Rank and world size come from RANK and WORLD_SIZE, the store from
 * MLOS_STORE. Element i of rank r is (r + 1) + (i % 5) * 0.5. Exit 0 when
 * everything succeeded, 3 when a collective failed, 2 on misuse. */
#define _POSIX_C_SOURCE 200809L
#include <mlos/collectives.h>
#include <mlos/training.h>
#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Exact encodings of normal floats that fit (the test's values do); the
 * library's own conversions round, these only have to be exact. */
static uint16_t to_half(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) == 0) return (uint16_t)(u >> 16);
  return (uint16_t)(((u >> 16) & 0x8000u) | ((((u >> 23) & 0xffu) - 112u) << 10) | ((u >> 13) & 0x3ffu));
}
static float from_half(uint16_t h) {
  uint32_t u = ((uint32_t)(h & 0x8000u) << 16);
  if (h & 0x7fffu) u |= ((uint32_t)(((h >> 10) & 0x1fu) + 112u) << 23) | ((uint32_t)(h & 0x3ffu) << 13);
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}
static uint16_t to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return (uint16_t)(u >> 16);
}
static float from_bf16(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* Element i of rank r, as a double; integers use (r + 1) * (i % 5 + 1). */
static double element(int dtype, size_t i, int rank) {
  if (dtype == MLOS_DTYPE_INT32 || dtype == MLOS_DTYPE_INT64) return (double)((rank + 1) * (int)(i % 5 + 1));
  return (double)(rank + 1) + (double)(i % 5) * 0.5;
}

static void put(void* v, int dtype, size_t i, double x) {
  switch (dtype) {
    case MLOS_DTYPE_FLOAT32: ((float*)v)[i] = (float)x; break;
    case MLOS_DTYPE_FLOAT64: ((double*)v)[i] = x; break;
    case MLOS_DTYPE_FLOAT16: ((uint16_t*)v)[i] = to_half((float)x); break;
    case MLOS_DTYPE_BFLOAT16: ((uint16_t*)v)[i] = to_bf16((float)x); break;
    case MLOS_DTYPE_INT32: ((int32_t*)v)[i] = (int32_t)x; break;
    default: ((int64_t*)v)[i] = (int64_t)x; break;
  }
}

static double get(const void* v, int dtype, size_t i) {
  switch (dtype) {
    case MLOS_DTYPE_FLOAT32: return ((const float*)v)[i];
    case MLOS_DTYPE_FLOAT64: return ((const double*)v)[i];
    case MLOS_DTYPE_FLOAT16: return from_half(((const uint16_t*)v)[i]);
    case MLOS_DTYPE_BFLOAT16: return from_bf16(((const uint16_t*)v)[i]);
    case MLOS_DTYPE_INT32: return ((const int32_t*)v)[i];
    default: return (double)((const int64_t*)v)[i];
  }
}

/* The driver calls device mode makes, by name from cuda.h (this file keeps
 * to the C library and the public API; 0 is CUDA_SUCCESS). */
typedef int (*cu_init_fn)(unsigned);
typedef int (*cu_device_get_fn)(int*, int);
typedef int (*cu_ctx_retain_fn)(void**, int);
typedef int (*cu_ctx_set_fn)(void*);
typedef int (*cu_alloc_fn)(unsigned long long*, size_t);
typedef int (*cu_free_fn)(unsigned long long);
typedef int (*cu_htod_fn)(unsigned long long, const void*, size_t);
typedef int (*cu_dtoh_fn)(void*, unsigned long long, size_t);
static struct {
  cu_alloc_fn alloc;
  cu_free_fn free;
  cu_htod_fn htod;
  cu_dtoh_fn dtoh;
} cuda;

static int load_cuda(void) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (!lib) return -1;
  cu_init_fn init = (cu_init_fn)dlsym(lib, "cuInit");
  cu_device_get_fn device_get = (cu_device_get_fn)dlsym(lib, "cuDeviceGet");
  cu_ctx_retain_fn retain = (cu_ctx_retain_fn)dlsym(lib, "cuDevicePrimaryCtxRetain");
  cu_ctx_set_fn set_current = (cu_ctx_set_fn)dlsym(lib, "cuCtxSetCurrent");
  cuda.alloc = (cu_alloc_fn)dlsym(lib, "cuMemAlloc_v2");
  cuda.free = (cu_free_fn)dlsym(lib, "cuMemFree_v2");
  cuda.htod = (cu_htod_fn)dlsym(lib, "cuMemcpyHtoD_v2");
  cuda.dtoh = (cu_dtoh_fn)dlsym(lib, "cuMemcpyDtoH_v2");
  int dev = 0;
  void* ctx = NULL;
  if (!init || !device_get || !retain || !set_current || !cuda.alloc || !cuda.free || !cuda.htod || !cuda.dtoh ||
      init(0) != 0 || device_get(&dev, 0) != 0 || retain(&ctx, dev) != 0 || set_current(ctx) != 0) {
    return -1;
  }
  return 0;
}

static void fill(float* v, size_t n, int rank) {
  for (size_t i = 0; i < n; ++i) v[i] = (float)(rank + 1) + (float)(i % 5) * 0.5f;
}

static int fail(const char* what, int code) {
  printf("{\"event\":\"error\",\"what\":\"%s\",\"code\":%d,\"t_ns\":%llu,\"message\":\"", what, code,
         (unsigned long long)now_ns());
  for (const char* m = mlos_last_error_message(); *m; ++m) {
    if (*m != '"' && *m != '\\' && *m != '\n') putchar(*m);
  }
  printf("\"}\n");
  return 3;
}

/* The ids of this process's threads, into tids[0..cap); returns how many. */
static size_t list_threads(long* tids, size_t cap) {
  size_t n = 0;
  DIR* d = opendir("/proc/self/task");
  if (!d) return 0;
  for (struct dirent* e; (e = readdir(d)) != NULL;) {
    if (e->d_name[0] != '.' && n < cap) tids[n++] = atol(e->d_name);
  }
  closedir(d);
  return n;
}

static int listed(const long* tids, size_t n, long tid) {
  for (size_t i = 0; i < n; ++i) {
    if (tids[i] == tid) return 1;
  }
  return 0;
}

/* Prints the threads that are not in before[0..n_before) with their
 * Cpus_allowed_list, then the allocation and the communication profile. */
static int report_placement(mlos_training_resources_t* res, const long* before, size_t n_before) {
  long now[256];
  const size_t n_now = list_threads(now, 256);
  int cpus[256];
  size_t n_cpus = 0;
  if (mlos_training_get_cpus(res, cpus, 256, &n_cpus) != MLOS_OK) return fail("get_cpus", -1);
  printf("{\"cpus\":[");
  for (size_t i = 0; i < n_cpus; ++i) printf("%s%d", i ? "," : "", cpus[i]);
  printf("],\"threads\":[");
  int first = 1;
  for (size_t i = 0; i < n_now; ++i) {
    if (listed(before, n_before, now[i])) continue;
    char path[64], line[256], allowed[128] = "";
    snprintf(path, sizeof path, "/proc/self/task/%ld/status", now[i]);
    FILE* f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f)) {
      if (sscanf(line, "Cpus_allowed_list: %127s", allowed) == 1) break;
    }
    if (f) fclose(f);
    printf("%s{\"tid\":%ld,\"allowed\":\"%s\"}", first ? "" : ",", now[i], allowed);
    first = 0;
  }
  mlos_training_phase_profile_t p = {.struct_size = sizeof p};
  if (mlos_training_get_phase_profile(res, &p) != MLOS_OK) return fail("get_phase_profile", -1);
  printf("],\"profile\":{\"communication_seconds\":%.9f,\"collective_calls\":%llu,\"collective_bytes\":%llu}}\n",
         p.communication_seconds, (unsigned long long)p.collective_calls, (unsigned long long)p.collective_bytes);
  return 0;
}

static void pattern(unsigned char* v, size_t n, int rank) {
  for (size_t i = 0; i < n; ++i) v[i] = (unsigned char)((31u * (unsigned)rank + i) & 0xffu);
}

static void print_fnv(const char* op, int root, size_t bytes, const unsigned char* v, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ v[i]) * 1099511628211ull;
  printf("{\"op\":\"%s\",\"root\":%d,\"bytes\":%zu,\"fnv\":\"%016llx\"}\n", op, root, bytes,
         (unsigned long long)h);
}

static unsigned char chunk_byte(int from, int to, size_t k) {
  return (unsigned char)((31u * (unsigned)from + 7u * (unsigned)to + k) & 0xffu);
}

/* One uneven all-to-all of the moves mode, checked byte for byte. */
static int uneven_alltoall(mlos_training_resources_t* res, int rank, int world, size_t n) {
  size_t* sends = calloc((size_t)world, sizeof *sends);
  size_t* recvs = calloc((size_t)world, sizeof *recvs);
  size_t sent = 0, received = 0;
  for (int i = 0; i < world; ++i) {
    sends[i] = n ? n + (size_t)rank + 2u * (size_t)i : 0;
    recvs[i] = n ? n + (size_t)i + 2u * (size_t)rank : 0;
    sent += sends[i];
    received += recvs[i];
  }
  unsigned char* in = malloc(sent + 1);
  unsigned char* out = malloc(received + 1);
  unsigned char* p = in;
  for (int i = 0; i < world; ++i)
    for (size_t k = 0; k < sends[i]; ++k) *p++ = chunk_byte(rank, i, k);
  memset(out, 0xee, received);
  int rc = mlos_training_alltoall(res, sent ? in : NULL, sends, received ? out : NULL, recvs, world);
  if (rc != MLOS_OK) return fail("alltoall", rc);
  int checked = 1;
  p = out;
  for (int r = 0; r < world; ++r)
    for (size_t k = 0; k < recvs[r]; ++k) checked &= *p++ == chunk_byte(r, rank, k);
  printf("{\"op\":\"alltoall\",\"bytes\":%zu,\"checked\":%s}\n", n, checked ? "true" : "false");
  /* The same buffer as input and output is refused before any rank waits. */
  if (sent && received && mlos_training_alltoall(res, in, sends, in, recvs, world) != MLOS_ERR_INVALID_ARGUMENT) {
    return fail("an all-to-all over overlapping buffers accepted", 0);
  }
  free(in);
  free(out);
  free(sends);
  free(recvs);
  return 0;
}

/* Gather to and scatter from `root` of n bytes per rank, checked here:
 * the root holds every rank's pattern in rank order, and rank i gets the
 * root's chunk i; elsewhere the root-only buffer is not touched. */
static int rooted_moves(mlos_training_resources_t* res, int rank, int world, int root, size_t n) {
  unsigned char* one = malloc(n + 1);
  unsigned char* all = malloc(n * (size_t)world + 1);
  pattern(one, n, rank);
  memset(all, 0xee, n * (size_t)world + 1);
  int rc = mlos_training_gather(res, n ? one : NULL, n ? all : NULL, n, root, world);
  if (rc != MLOS_OK) return fail("gather", rc);
  int checked = 1;
  for (int r = 0; r < world; ++r) {
    for (size_t k = 0; k < n; ++k) {
      const unsigned char want = rank == root ? (unsigned char)((31u * (unsigned)r + k) & 0xffu) : 0xee;
      checked &= all[(size_t)r * n + k] == want;
    }
  }
  printf("{\"op\":\"gather\",\"root\":%d,\"bytes\":%zu,\"checked\":%s}\n", root, n, checked ? "true" : "false");
  for (int i = 0; i < world; ++i)
    for (size_t k = 0; k < n; ++k) all[(size_t)i * n + k] = chunk_byte(rank, i, k);
  memset(one, 0xee, n + 1);
  rc = mlos_training_scatter(res, n && rank == root ? all : NULL, n ? one : NULL, n, root, world);
  if (rc != MLOS_OK) return fail("scatter", rc);
  checked = one[n] == 0xee;
  for (size_t k = 0; k < n; ++k) checked &= one[k] == chunk_byte(root, rank, k);
  printf("{\"op\":\"scatter\",\"root\":%d,\"bytes\":%zu,\"checked\":%s}\n", root, n, checked ? "true" : "false");
  free(one);
  free(all);
  return 0;
}

/* The moves mode above. */
static int moves(mlos_training_resources_t* res, int rank, int world) {
  static const size_t sizes[] = {0, 1, 13, 300000};
  for (size_t s = 0; s < sizeof sizes / sizeof *sizes; ++s) {
    const size_t n = sizes[s];
    unsigned char* one = malloc(n + 1);
    unsigned char* all = malloc(n * (size_t)world + 1);
    for (int root = 0; root < world; ++root) {
      pattern(one, n, rank);
      int rc = mlos_training_broadcast(res, n ? one : NULL, n, root, world);
      if (rc != MLOS_OK) return fail("broadcast", rc);
      print_fnv("broadcast", root, n, one, n);
    }
    pattern(one, n, rank);
    memset(all, 0xee, n * (size_t)world);
    int rc = mlos_training_allgather(res, n ? one : NULL, n ? all : NULL, n, world);
    if (rc != MLOS_OK) return fail("allgather", rc);
    print_fnv("allgather", -1, n, all, n * (size_t)world);
    memset(all, 0xee, n * (size_t)world);
    pattern(all + (size_t)rank * n, n, rank);
    rc = mlos_training_allgather(res, n ? all + (size_t)rank * n : NULL, n ? all : NULL, n, world);
    if (rc != MLOS_OK) return fail("allgather in place", rc);
    print_fnv("allgather_in_place", -1, n, all, n * (size_t)world);
    if ((rc = uneven_alltoall(res, rank, world, n)) != 0) return rc;
    for (int root = 0; root < world; ++root) {
      if ((rc = rooted_moves(res, rank, world, root, n)) != 0) return rc;
    }
    free(one);
    free(all);
  }
  char byte = 0;
  if (mlos_training_broadcast(res, &byte, 1, 0, world + 1) != MLOS_ERR_INVALID_ARGUMENT) {
    return fail("a world size other than the group's accepted", 0);
  }
  return 0;
}

/* Posts a transfer and waits for it; the peer's rank into *peer. */
static int transfer(mlos_training_resources_t* res, int sending, void* data, size_t n, int peer, uint32_t tag,
                    int world, int* from) {
  mlos_transfer_t* t = NULL;
  int rc = sending ? mlos_training_isend(res, data, n, peer, tag, world, &t)
                   : mlos_training_irecv(res, data, n, peer, tag, world, &t);
  return rc != MLOS_OK ? rc : mlos_training_wait_transfer(t, from);
}

struct reducing {
  mlos_training_resources_t* res;
  int rc;
};

static void* reduce_on_thread(void* arg) {
  struct reducing* r = arg;
  float v[64];
  fill(v, 64, 0);
  r->rc = mlos_training_allreduce(r->res, v, 64, MLOS_REDUCE_SUM);
  return NULL;
}

/* The transfers mode's cases between ranks 0 and 1. */
static int pair_transfers(mlos_training_resources_t* res, int rank, int world) {
  const int other = 1 - rank;
  /* Three sends of one tag, received in the order they were posted. */
  unsigned char msgs[3][100];
  mlos_transfer_t* ts[3];
  for (int m = 0; m < 3; ++m) {
    memset(msgs[m], rank == 0 ? 'a' + m : 0, sizeof msgs[m]);
    int rc = rank == 0 ? mlos_training_isend(res, msgs[m], sizeof msgs[m], 1, 7, world, &ts[m])
                       : mlos_training_irecv(res, msgs[m], sizeof msgs[m], 0, 7, world, &ts[m]);
    if (rc != MLOS_OK) return fail("post of an ordered transfer", rc);
  }
  int checked = 1;
  for (int m = 0; m < 3; ++m) {
    int rc = mlos_training_wait_transfer(ts[m], NULL);
    if (rc != MLOS_OK) return fail("wait of an ordered transfer", rc);
    for (size_t k = 0; k < sizeof msgs[m]; ++k) checked &= msgs[m][k] == 'a' + m;
  }
  printf("{\"op\":\"ordered\",\"checked\":%s}\n", checked ? "true" : "false");
  /* A receive from any rank. */
  int from = -1, value = rank == 0 ? 4242 : 0;
  int rc = transfer(res, rank == 0, &value, sizeof value, rank == 0 ? 1 : -1, 9, world, &from);
  if (rc != MLOS_OK) return fail("any-source transfer", rc);
  printf("{\"op\":\"any_source\",\"peer\":%d,\"value\":%d}\n", from, value);
  /* Rank 0's all-reduce waits for rank 1, which first waits for rank 0's
   * send: posting that send must not wait behind the all-reduce. The pause
   * only makes it likely that the all-reduce is in flight when it posts. */
  pthread_t thread;
  struct reducing reducing = {res, 0};
  if (rank == 0) {
    pthread_create(&thread, NULL, reduce_on_thread, &reducing);
    nanosleep(&(struct timespec){.tv_nsec = 200000000}, NULL);
  }
  char word[16] = {0};
  if (rank == 0) strcpy(word, "beside");
  rc = transfer(res, rank == 0, word, sizeof word, other, 11, world, NULL);
  if (rc != MLOS_OK) return fail("transfer beside a collective", rc);
  if (rank == 1) {
    reduce_on_thread(&reducing);
  } else {
    pthread_join(thread, NULL);
  }
  if (reducing.rc != MLOS_OK) return fail("allreduce beside a transfer", reducing.rc);
  printf("{\"op\":\"beside_collective\",\"checked\":%s}\n", strcmp(word, "beside") == 0 ? "true" : "false");
  return 0;
}

/* The transfers mode above. */
static int transfers(mlos_training_resources_t* res, int rank, int world) {
  static const size_t sizes[] = {0, 1, 13, 300000};
  const int left = (rank + world - 1) % world, right = (rank + 1) % world;
  for (size_t s = 0; s < sizeof sizes / sizeof *sizes; ++s) {
    const size_t n = sizes[s];
    unsigned char* out = malloc(n + 1);
    unsigned char* in = malloc(n + 1);
    for (size_t k = 0; k < n; ++k) out[k] = chunk_byte(rank, right, k);
    memset(in, 0xee, n + 1);
    mlos_transfer_t *recv = NULL, *send = NULL;
    int rc = mlos_training_irecv(res, n ? in : NULL, n, left, (uint32_t)s, world, &recv);
    if (rc != MLOS_OK) return fail("irecv", rc);
    rc = mlos_training_isend(res, n ? out : NULL, n, right, (uint32_t)s, world, &send);
    if (rc != MLOS_OK) return fail("isend", rc);
    int sent_to = -1, came_from = -1;
    if ((rc = mlos_training_wait_transfer(send, &sent_to)) != MLOS_OK) return fail("wait for a send", rc);
    if ((rc = mlos_training_wait_transfer(recv, &came_from)) != MLOS_OK) return fail("wait for a receive", rc);
    int checked = sent_to == right && in[n] == 0xee;
    for (size_t k = 0; k < n; ++k) checked &= in[k] == chunk_byte(left, rank, k);
    printf("{\"op\":\"ring\",\"bytes\":%zu,\"peer\":%d,\"checked\":%s}\n", n, came_from,
           checked ? "true" : "false");
    free(in);
    free(out);
  }
  if (rank <= 1 && pair_transfers(res, rank, world) != 0) return 3;
  if (rank > 1) { /* the all-reduce of pair_transfers needs every rank */
    struct reducing reducing = {res, 0};
    reduce_on_thread(&reducing);
    if (reducing.rc != MLOS_OK) return fail("allreduce beside a transfer", reducing.rc);
  }
  /* Refused before anything is posted: no peer waits for them. */
  mlos_transfer_t* t = NULL;
  char byte = 0;
  int refused = mlos_training_isend(res, &byte, 1, rank, 0, world, &t) == MLOS_ERR_INVALID_ARGUMENT &&
                mlos_training_isend(res, &byte, 1, world, 0, world, &t) == MLOS_ERR_INVALID_ARGUMENT &&
                mlos_training_irecv(res, &byte, 1, -2, 0, world, &t) == MLOS_ERR_INVALID_ARGUMENT &&
                mlos_training_irecv(res, NULL, 1, right, 0, world, &t) == MLOS_ERR_INVALID_ARGUMENT &&
                mlos_training_isend(res, &byte, 1, right, 0, world, NULL) == MLOS_ERR_INVALID_ARGUMENT &&
                mlos_training_isend(res, &byte, 1, right, 0, world + 1, &t) == MLOS_ERR_INVALID_ARGUMENT &&
                mlos_training_wait_transfer(NULL, NULL) == MLOS_ERR_INVALID_ARGUMENT && t == NULL;
  printf("{\"op\":\"refusals\",\"checked\":%s}\n", refused ? "true" : "false");
  return 0;
}

/* One float32 SUM of n elements of rank + 1 in device memory. */
static int large_device_sum(mlos_training_resources_t* res, size_t n, int rank) {
  float* v = malloc(n * sizeof *v);
  unsigned long long d = 0;
  if (v == NULL) return fail("malloc", -1);
  for (size_t i = 0; i < n; ++i) v[i] = (float)(rank + 1);
  if (cuda.alloc(&d, n * sizeof *v) != 0 || cuda.htod(d, v, n * sizeof *v) != 0) return fail("copy to the device", -1);
  const int rc = mlos_training_allreduce(res, (void*)(uintptr_t)d, n, MLOS_REDUCE_SUM);
  if (rc != MLOS_OK) return fail("allreduce", rc);
  if (cuda.dtoh(v, d, n * sizeof *v) != 0 || cuda.free(d) != 0) return fail("copy from the device", -1);
  printf("{\"case\":\"large\",\"count\":%zu,\"first\":%.9g,\"last\":%.9g}\n", n, v[0], v[n - 1]);
  free(v);
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 2 || (strcmp(argv[1], "check") != 0 && strcmp(argv[1], "loop") != 0 &&
                    strcmp(argv[1], "typed") != 0 && strcmp(argv[1], "placement") != 0 &&
                    strcmp(argv[1], "device") != 0 && strcmp(argv[1], "moves") != 0 &&
                    strcmp(argv[1], "transfers") != 0)) {
    fprintf(stderr, "usage: %s check|typed|device|moves|transfers|placement|loop\n", argv[0]);
    return 2;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  const char* r = getenv("RANK");
  const char* w = getenv("WORLD_SIZE");
  const int rank = r ? atoi(r) : 0, world = w ? atoi(w) : 1;
  mlos_training_resource_request_t req = {.num_cpus = 1, .numa_node_preference = -1};
  mlos_training_resources_t* res = NULL;
  int rc = mlos_training_request_resources(&req, &res);
  if (rc != MLOS_OK) return fail("request", rc);
  long before[256];
  const size_t n_before = list_threads(before, 256);
  rc = mlos_training_barrier(res, rank, world);
  if (rc != MLOS_OK) return fail("barrier", rc);

  const int on_device = strcmp(argv[1], "device") == 0;
  if (on_device && load_cuda() != 0) return fail("no CUDA driver", -1);
  if (strcmp(argv[1], "typed") == 0 || on_device) {
    static const size_t sizes[] = {0, 1, 7, 1000};
    for (int dtype = MLOS_DTYPE_FLOAT32; dtype <= MLOS_DTYPE_INT64; ++dtype) {
      for (int op = MLOS_REDUCE_SUM; op <= MLOS_REDUCE_AVG; ++op) {
        for (size_t s = 0; s < sizeof sizes / sizeof *sizes; ++s) {
          const size_t n = sizes[s];
          double* v = malloc((n ? n : 1) * sizeof *v); /* room for the widest type */
          for (size_t i = 0; i < n; ++i) put(v, dtype, i, element(dtype, i, rank));
          unsigned long long d = 0;
          const size_t bytes = n * sizeof *v;  /* more than the dtype needs: fine */
          if (on_device && n && (cuda.alloc(&d, bytes) != 0 || cuda.htod(d, v, bytes) != 0)) {
            return fail("copy to the device", -1);
          }
          void* data = !n ? NULL : on_device ? (void*)(uintptr_t)d : (void*)v;
          rc = mlos_training_allreduce_typed(res, data, n, (mlos_dtype_t)dtype, (mlos_reduce_op_t)op);
          if (rc != MLOS_OK) return fail("allreduce_typed", rc);
          if (on_device && n && (cuda.dtoh(v, d, bytes) != 0 || cuda.free(d) != 0)) {
            return fail("copy from the device", -1);
          }
          double sum = 0;
          for (size_t i = 0; i < n; ++i) sum += get(v, dtype, i);
          printf("{\"dtype\":%d,\"op\":%d,\"count\":%zu,\"sum\":%.9g,\"first\":[", dtype, op, n, sum);
          for (size_t i = 0; i < n && i < 5; ++i) printf("%s%.9g", i ? "," : "", get(v, dtype, i));
          printf("]}\n");
          free(v);
        }
      }
    }
    if (mlos_training_allreduce_typed(res, NULL, 0, (mlos_dtype_t)9, MLOS_REDUCE_SUM) != MLOS_ERR_INVALID_ARGUMENT) {
      return fail("unknown dtype accepted", 0);
    }
    if (on_device) { /* only all-reduce takes GPU memory */
      unsigned long long d = 0;
      if (cuda.alloc(&d, 64) != 0) return fail("cuMemAlloc", -1);
      if (mlos_training_broadcast(res, (void*)(uintptr_t)d, 64, 0, world) != MLOS_ERR_UNSUPPORTED) {
        return fail("a broadcast of GPU memory accepted", 0);
      }
      cuda.free(d);
    }
    const char* large = getenv("COLLECTIVE_LARGE_FLOATS");
    if (on_device && large != NULL && large_device_sum(res, (size_t)strtoull(large, NULL, 10), rank) != 0) return 3;
  } else if (strcmp(argv[1], "moves") == 0) {
    if (moves(res, rank, world) != 0) return 3;
  } else if (strcmp(argv[1], "transfers") == 0) {
    if (transfers(res, rank, world) != 0) return 3;
  } else if (strcmp(argv[1], "placement") == 0) {
    float v[1000];
    for (int i = 0; i < 3; ++i) {
      fill(v, 1000, rank);
      rc = mlos_training_allreduce(res, v, 1000, MLOS_REDUCE_SUM);
      if (rc != MLOS_OK) return fail("allreduce", rc);
    }
    if (report_placement(res, before, n_before) != 0) return 3;
  } else if (strcmp(argv[1], "check") == 0) {
    static const size_t sizes[] = {0, 1, 7, 1000, 65537};
    for (int op = MLOS_REDUCE_SUM; op <= MLOS_REDUCE_AVG; ++op) {
      for (size_t s = 0; s < sizeof sizes / sizeof *sizes; ++s) {
        const size_t n = sizes[s];
        float* v = malloc((n ? n : 1) * sizeof *v);
        fill(v, n, rank);
        rc = mlos_training_allreduce(res, n ? v : NULL, n, (mlos_reduce_op_t)op);
        if (rc != MLOS_OK) return fail("allreduce", rc);
        double sum = 0;
        for (size_t i = 0; i < n; ++i) sum += v[i];
        printf("{\"op\":%d,\"count\":%zu,\"sum\":%.9g,\"first\":[", op, n, sum);
        for (size_t i = 0; i < n && i < 5; ++i) printf("%s%.9g", i ? "," : "", v[i]);
        printf("],\"last\":%.9g}\n", n ? v[n - 1] : 0.0);
        free(v);
      }
    }
  } else {
    float v[1000];
    for (unsigned long long iter = 0;; ++iter) {
      fill(v, 1000, rank);
      rc = mlos_training_allreduce(res, v, 1000, MLOS_REDUCE_SUM);
      if (rc != MLOS_OK) return fail("allreduce", rc);
      if (iter == 0) printf("{\"event\":\"ready\",\"t_ns\":%llu}\n", (unsigned long long)now_ns());
    }
  }
  rc = mlos_training_release_resources(res);
  return rc == MLOS_OK ? 0 : fail("release", rc);
}
