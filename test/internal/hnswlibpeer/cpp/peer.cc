// peer.cc: hnswlib, the C++ reference HNSW library, building and searching
// the vectors of BenchmarkStoreVector in memory, driven over stdin and
// stdout by package hnswlibpeer (hnswlibpeer.go beside this folder, which
// compiles it with g++ against Debian's header-only libhnswlib-dev).
//
//	peer VECTORS DIM M EF_CONSTRUCTION THREADS
//
// VECTORS is a file of n × DIM float32 (little-endian), n taken from its
// size; the index (InnerProductSpace: the vectors are unit, so cosine is
// the inner product) holds at most n. It prints "ready N" once they are
// read, then answers one line a command:
//
//	add LO HI           adds vectors LO..HI-1 (labels LO..HI-1) on THREADS
//	                    threads, each taking the next vector from an atomic
//	                    counter and adding it (as hnswlib's ParallelFor);
//	                    answers the nanoseconds it took
//	search K EF FILE    the top K of each query in FILE (float32 rows of
//	                    DIM; the rest of the line) at ef EF: a line a
//	                    query, its labels closest first, separated by
//	                    spaces
//	quit                exits
//
// A command that fails answers "error: " and why.
#include <hnswlib/hnswlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

// readFloats reads a file of float32 rows of dim into out; false (and why
// in err) when it cannot or its size is not whole rows.
static bool readFloats(const std::string& path, size_t dim, std::vector<float>& out, std::string& err) {
  FILE* f = fopen(path.c_str(), "rb");
  if (!f) {
    err = "open " + path;
    return false;
  }
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  if (size < 0 || size % (long)(dim * sizeof(float)) != 0) {
    fclose(f);
    err = path + ": not whole rows of " + std::to_string(dim) + " float32";
    return false;
  }
  out.resize(size / sizeof(float));
  size_t got = fread(out.data(), sizeof(float), out.size(), f);
  fclose(f);
  if (got != out.size()) {
    err = "read " + path;
    return false;
  }
  return true;
}

int main(int argc, char** argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: peer VECTORS DIM M EF_CONSTRUCTION THREADS\n");
    return 2;
  }
  const size_t dim = strtoul(argv[2], nullptr, 10), m = strtoul(argv[3], nullptr, 10),
               efc = strtoul(argv[4], nullptr, 10), threads = strtoul(argv[5], nullptr, 10);
  if (dim == 0 || m == 0 || efc == 0 || threads == 0) {
    fprintf(stderr, "peer: DIM, M, EF_CONSTRUCTION and THREADS must be positive\n");
    return 2;
  }
  std::vector<float> base;
  std::string err;
  if (!readFloats(argv[1], dim, base, err)) {
    fprintf(stderr, "peer: %s\n", err.c_str());
    return 1;
  }
  const size_t n = base.size() / dim;
  hnswlib::InnerProductSpace space(dim);
  hnswlib::HierarchicalNSW<float> index(&space, n, m, efc);
  printf("ready %zu\n", n);
  fflush(stdout);

  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    std::string cmd;
    in >> cmd;
    if (cmd == "add") {
      size_t lo, hi;
      if (!(in >> lo >> hi) || lo > hi || hi > n) {
        printf("error: add LO HI within 0..%zu\n", n);
        fflush(stdout);
        continue;
      }
      std::atomic<size_t> next(lo);
      std::mutex mu;
      std::string failed;
      auto t0 = std::chrono::steady_clock::now();
      std::vector<std::thread> workers;
      for (size_t t = 0; t < threads; t++) {
        workers.emplace_back([&] {
          for (size_t i; (i = next++) < hi;) {
            try {
              index.addPoint(base.data() + i * dim, i);
            } catch (const std::exception& e) {
              std::lock_guard<std::mutex> l(mu);
              failed = e.what();
              next = hi;
            }
          }
        });
      }
      for (auto& w : workers) w.join();
      long long ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
      if (!failed.empty()) {
        printf("error: %s\n", failed.c_str());
      } else {
        printf("%lld\n", ns);
      }
      fflush(stdout);
    } else if (cmd == "search") {
      std::string path;
      size_t k, ef;
      std::vector<float> q;
      if (!(in >> k >> ef) || k == 0 || !std::getline(in >> std::ws, path) || path.empty()) {
        printf("error: search K EF FILE\n");
      } else if (!readFloats(path, dim, q, err)) {
        printf("error: %s\n", err.c_str());
      } else {
        index.setEf(ef);
        std::string out;
        for (size_t i = 0; i < q.size() / dim; i++) {
          auto res = index.searchKnn(q.data() + i * dim, k);  // farthest on top
          std::vector<hnswlib::labeltype> ids;
          for (; !res.empty(); res.pop()) ids.push_back(res.top().second);
          std::reverse(ids.begin(), ids.end());
          for (size_t j = 0; j < ids.size(); j++) {
            if (j > 0) out += ' ';
            out += std::to_string(ids[j]);
          }
          out += '\n';
        }
        fputs(out.c_str(), stdout);
      }
      fflush(stdout);
    } else if (cmd == "quit") {
      return 0;
    } else {
      printf("error: unknown command %s\n", cmd.c_str());
      fflush(stdout);
    }
  }
  return 0;
}
