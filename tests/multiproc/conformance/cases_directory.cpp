// cases_directory.cpp - the directory seen from the other rank, and a send
// to a resource deleted after its route was cached.
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "cases.hpp"

namespace conf {
namespace {

// Every resource matching `pattern` (multi-answer query), with its name.
struct Answer {
  rocl_gid_t gid;
  std::string name;
};

std::vector<Answer> query_all(Attrs &pattern, const char *what) {
  rocl_handler_t *h = rocl_query_start(pattern.get());
  CHECK(h != nullptr, "rocl_query_start (%s)", what);
  std::vector<Answer> out;
  for (;;) {
    Attrs answer;
    answer.ask("name", 64);
    const std::int64_t g = rocl_query_next(h, answer.get());
    if (g == ROCL_EEND) break;
    CHECK(g > 0, "rocl_query_next (%s) returned %s", what, rc_text(g).c_str());
    out.push_back({static_cast<rocl_gid_t>(g), answer.get("name").value_or("")});
    CHECK(out.size() < 10000, "rocl_query_next (%s) does not end", what);
  }
  CHECK_RC(rocl_query_stop(h), ROCL_OK);
  for (std::size_t i = 1; i < out.size(); ++i) {
    CHECK(out[i - 1].gid < out[i].gid, "multi-answer query (%s): gid %s after %s", what,
          hex(out[i].gid).c_str(), hex(out[i - 1].gid).c_str());
  }
  return out;
}

std::string gid_list(const std::vector<rocl_gid_t> &v) {
  std::string s;
  for (rocl_gid_t g : v) s += " " + hex(g);
  return s;
}

std::vector<rocl_gid_t> gids_of(const std::vector<Answer> &v) {
  std::vector<rocl_gid_t> out;
  for (const Answer &a : v) out.push_back(a.gid);
  return out;
}

void pattern_blue(Attrs &p) {
  p.add("type", "conf");
  p.add("case", me().case_name);
  p.add("color", "blue");
}

}  // namespace

// ---- 8. directory across the ranks -------------------------------------------------------
// Rank 1 registers d0..d6 (d0, d2, d4, d5, d6 blue; weight a binary value),
// rank 0 r0b (blue) and r0r (red). Rank 0 queries rank 1's, rank 1 deletes
// some, rank 0 must stop seeing them (within 2 s).

void case_directory(Rank &r) {
  constexpr int kD = 7;
  const char *const kColor[kD] = {"blue", "red", "blue", "red", "blue", "blue", "blue"};
  std::vector<rocl_gid_t> d(kD, 0);
  rocl_gid_t r0b = 0, r0r = 0;
  const rocl_gid_t my_ctx = rocl_context_gid();
  CHECK(my_ctx != ROCL_NULL_GID, "rocl_context_gid");
  if (r.rank == 1) {
    for (int i = 0; i < kD; ++i) {
      Attrs a;
      const std::uint64_t weight = 1000 + i;
      a.add("color", kColor[i]);
      a.add_raw("weight", &weight, sizeof weight);
      d[i] = reg(("d" + std::to_string(i)).c_str(), &a);
    }
    ctl_send(1, d.data(), d.size() * sizeof(rocl_gid_t));
    ctl_send_value(2, my_ctx);
  } else {
    std::vector<unsigned char> b = ctl_recv(1);
    CHECK(b.size() == d.size() * sizeof(rocl_gid_t), "gid list of %zu bytes", b.size());
    std::memcpy(d.data(), b.data(), b.size());
    const rocl_gid_t ctx1 = ctl_recv_value<rocl_gid_t>(2);
    Attrs blue, red;
    blue.add("color", "blue");
    red.add("color", "red");
    r0b = reg("r0b", &blue);
    r0r = reg("r0r", &red);

    step("single queries");
    {  // By attributes, asking for the others.
      Attrs q;
      q.add("type", "conf").add("case", r.case_name).add("name", "d0");
      q.ask("color", 16).ask("weight", 8).ask("context", 8).ask("missing", 8);
      rocl_gid_t g = ROCL_NULL_GID;
      CHECK_RC(rocl_query(&g, q.get()), ROCL_OK);
      CHECK(g == d[0], "query name=d0 found %s, d0 is %s", hex(g).c_str(), hex(d[0]).c_str());
      CHECK(q.get("color") == "blue", "color of d0: '%s'", q.get("color").value_or("?").c_str());
      const std::uint64_t w1000 = 1000;
      CHECK(q.get("weight") == std::string(reinterpret_cast<const char *>(&w1000), 8),
            "weight of d0 is not the 8 bytes registered");
      rocl_gid_t ctx = 0;
      const auto c = q.get("context");
      CHECK(c && c->size() == 8, "no 8-byte context attribute");
      std::memcpy(&ctx, c->data(), 8);
      CHECK(ctx == ctx1, "context of d0 is %s, rank 1's context is %s", hex(ctx).c_str(),
            hex(ctx1).c_str());
      CHECK(!q.get("missing"), "an attribute d0 does not have was filled in");
    }
    {  // By gid.
      Attrs q;
      q.ask("name", 16).ask("color", 16);
      rocl_gid_t g = d[3];
      CHECK_RC(rocl_query(&g, q.get()), ROCL_OK);
      CHECK(g == d[3] && q.get("name") == "d3" && q.get("color") == "red",
            "query by gid %s: gid %s name '%s' color '%s'", hex(d[3]).c_str(), hex(g).c_str(),
            q.get("name").value_or("?").c_str(), q.get("color").value_or("?").c_str());
    }
    {  // An answer longer than the space reserved: ROCL_ENOSPC, list unchanged.
      Attrs q;
      q.add("type", "conf").add("case", r.case_name).add("name", "d0").ask("color", 2);
      rocl_gid_t g = ROCL_NULL_GID;
      CHECK_RC(rocl_query(&g, q.get()), ROCL_ENOSPC);
      CHECK(!q.get("color"), "ROCL_ENOSPC but the value was filled in");
    }
    {  // Nothing matches.
      Attrs q;
      q.add("type", "conf").add("case", r.case_name).add("name", "nope");
      rocl_gid_t g = ROCL_NULL_GID;
      CHECK_RC(rocl_query(&g, q.get()), ROCL_ENOTFOUND);
      Attrs q2;
      g = d[kD - 1] + 0x100000;
      CHECK_RC(rocl_query(&g, q2.get()), ROCL_ENOTFOUND);
    }
    std::vector<rocl_gid_t> blues = {d[0], d[2], d[4], d[5], d[6], r0b};
    std::sort(blues.begin(), blues.end());
    {  // The single answer is the lowest gid.
      Attrs q;
      pattern_blue(q);
      rocl_gid_t g = ROCL_NULL_GID;
      CHECK_RC(rocl_query(&g, q.get()), ROCL_OK);
      CHECK(g == blues[0], "query color=blue found %s, the lowest blue gid is %s", hex(g).c_str(),
            hex(blues[0]).c_str());
    }

    step("multi-answer queries");
    {
      Attrs p;
      pattern_blue(p);
      std::vector<Answer> got = query_all(p, "color=blue");
      CHECK(gids_of(got) == blues, "color=blue found%s, expected%s", gid_list(gids_of(got)).c_str(),
            gid_list(blues).c_str());
      for (const Answer &a : got) {
        const int i =
            a.gid == r0b ? -1 : static_cast<int>(std::find(d.begin(), d.end(), a.gid) - d.begin());
        const std::string want = i < 0 ? "r0b" : "d" + std::to_string(i);
        CHECK(a.name == want, "answer %s has name '%s', expected '%s'", hex(a.gid).c_str(),
              a.name.c_str(), want.c_str());
      }
      Attrs pc;
      pc.add("type", "context");
      std::vector<rocl_gid_t> ctxs = gids_of(query_all(pc, "type=context"));
      CHECK(std::count(ctxs.begin(), ctxs.end(), my_ctx) == 1 &&
                std::count(ctxs.begin(), ctxs.end(), ctx1) == 1,
            "type=context found%s; this rank's is %s, rank 1's %s", gid_list(ctxs).c_str(),
            hex(my_ctx).c_str(), hex(ctx1).c_str());
      if (!r.threaded) {
        CHECK(my_ctx != ctx1, "both processes have context %s", hex(my_ctx).c_str());
        // A resource of another context cannot be deleted from here.
        CHECK_RC(rocl_delete(d[1]), ROCL_EBADGID);
      }
    }

    // Rank 1 deletes d0 and d2: gone for us within 2 s.
    ctl_send(3, "queried", 7);
    ctl_recv(4);
    const double t0 = now_ms();
    double gone_ms = -1;
    for (;;) {
      Attrs q1, q2;
      rocl_gid_t g1 = d[0], g2 = ROCL_NULL_GID;
      q2.add("type", "conf").add("case", r.case_name).add("name", "d2");
      const int rc1 = rocl_query(&g1, q1.get());
      const int rc2 = rocl_query(&g2, q2.get());
      if (rc1 == ROCL_ENOTFOUND && rc2 == ROCL_ENOTFOUND) {
        gone_ms = now_ms() - t0;
        break;
      }
      CHECK(now_ms() - t0 < 2000,
            "2 s after rank 1 deleted d0 and d2 they are still there (query d0 by gid: %s, "
            "d2 by name: %s)",
            rc_text(rc1).c_str(), rc_text(rc2).c_str());
      usleep(1000);
    }
    std::vector<rocl_gid_t> left = {d[4], d[5], d[6], r0b};
    std::sort(left.begin(), left.end());
    {
      Attrs p;
      pattern_blue(p);
      std::vector<rocl_gid_t> got = gids_of(query_all(p, "color=blue after deletes"));
      CHECK(got == left, "after deleting d0, d2: color=blue found%s, expected%s",
            gid_list(got).c_str(), gid_list(left).c_str());
    }
    // A send to a deleted resource fails.
    CHECK_RC(rocl_send(r0b, d[0], 1, nullptr, 0), ROCL_EBADGID);

    // Deleted while a multi-answer query runs: skipped.
    step("delete during a multi-answer query");
    {
      Attrs p;
      pattern_blue(p);
      rocl_handler_t *h = rocl_query_start(p.get());
      CHECK(h != nullptr, "rocl_query_start");
      Attrs a1;
      const std::int64_t first = rocl_query_next(h, a1.get());
      CHECK(first == static_cast<std::int64_t>(left[0]), "first answer %s, expected %s",
            rc_text(first).c_str(), hex(left[0]).c_str());
      // The largest of rank 1's remaining blue ones: still ahead of the cursor.
      rocl_gid_t victim = 0;
      for (rocl_gid_t g : {d[4], d[5], d[6]})
        if (g != left[0]) victim = std::max(victim, g);
      ctl_send_value(5, victim);
      ctl_recv(6);
      std::vector<rocl_gid_t> rest;
      for (;;) {
        Attrs a;
        const std::int64_t g = rocl_query_next(h, a.get());
        if (g == ROCL_EEND) break;
        CHECK(g > 0, "rocl_query_next returned %s", rc_text(g).c_str());
        rest.push_back(static_cast<rocl_gid_t>(g));
        CHECK(rest.size() < 100, "the query does not end");
      }
      CHECK_RC(rocl_query_stop(h), ROCL_OK);
      std::vector<rocl_gid_t> want;
      for (std::size_t i = 1; i < left.size(); ++i)
        if (left[i] != victim) want.push_back(left[i]);
      CHECK(rest == want, "after %s was deleted mid-query the rest is%s, expected%s",
            hex(victim).c_str(), gid_list(rest).c_str(), gid_list(want).c_str());
    }
    note("queries ok; deletions seen after %.1f ms", gone_ms);
  }

  if (r.rank == 1) {
    ctl_recv(3);
    step("deleting");
    CHECK_RC(rocl_delete(d[0]), ROCL_OK);
    CHECK_RC(rocl_delete(d[2]), ROCL_OK);
    CHECK_RC(rocl_delete(d[2]), ROCL_EBADGID);
    ctl_send(4, "deleted", 7);
    const rocl_gid_t victim = ctl_recv_value<rocl_gid_t>(5);
    CHECK_RC(rocl_delete(victim), ROCL_OK);
    ctl_send(6, "deleted", 7);
    // Rank 0's resources are visible here too.
    Attrs q;
    q.add("type", "conf").add("case", r.case_name).add("name", "r0r").ask("color", 16);
    rocl_gid_t g = ROCL_NULL_GID;
    CHECK_RC(rocl_query(&g, q.get()), ROCL_OK);
    CHECK(q.get("color") == "red", "r0r's color seen from rank 1: '%s'",
          q.get("color").value_or("?").c_str());
  }
  barrier("done");
  (void)r0r;
}

// ---- 9. stale route cache ---------------------------------------------------------------
// Rank 0 sends to rank 1's A (its route is now cached); rank 1 deletes A and
// registers B. rocl.h (rocl_delete): "later sends to it fail with
// ROCL_EBADGID" - also from another process, also with a cached route.

void case_stale_cache(Rank &r) {
  if (r.rank == 1) {
    const rocl_gid_t a = reg("A");
    ctl_send_value(1, a);
    const rocl_gid_t s = find("S", 0);
    for (int i = 0; i < 2; ++i) {
      Msg m = recv_msg(a, s, 1);
      CHECK(m.data == "to A", "A got \"%s\"", m.data.c_str());
    }
    CHECK_RC(rocl_delete(a), ROCL_OK);
    const rocl_gid_t b = reg("B");
    ctl_send_value(2, b);
    // Only the message meant for B arrives on B.
    Msg m = recv_msg(b, s, ROCL_ANY_TAG);
    CHECK(m.tag == 3 && m.data == "to B", "B got tag %d \"%s\"", m.tag, m.data.c_str());
    ctl_recv(3);  // rank 0 is done sending
    void *p = nullptr;
    rocl_gid_t from = 0;
    int tag = -1;
    const int rc = rocl_recv(b, ROCL_ANY_GID, ROCL_ANY_TAG, &p, &from, &tag, nullptr, 200);
    CHECK(rc == ROCL_ETIMEDOUT, "B got an extra message from %s tag %d (%s)", hex(from).c_str(),
          tag, rc_text(rc).c_str());
  } else {
    const rocl_gid_t s = reg("S");
    const rocl_gid_t a = ctl_recv_value<rocl_gid_t>(1);
    send_text(s, a, 1, "to A");                          // resolves and caches the route
    send_text(s, a, 1, "to A");                          // uses it
    const rocl_gid_t b = ctl_recv_value<rocl_gid_t>(2);  // A is deleted by now
    step("send to the deleted resource");
    char text[] = "to deleted A";
    const int rc1 = rocl_send(s, a, 2, text, sizeof text - 1);
    const std::string why = rocl_last_error();
    EXPECT(rc1 == ROCL_EBADGID,
           "user memory to deleted %s (route cached) returned %s, expected ROCL_EBADGID "
           "(rocl_delete: later sends to it fail with ROCL_EBADGID)",
           hex(a).c_str(), rc_text(rc1).c_str());
    if (rc1 == ROCL_EBADGID) {
      EXPECT(contains(why, hex(a)), "the sentence does not name %s: \"%s\"", hex(a).c_str(),
             why.c_str());
    }
    // A zero-copy buffer: on failure it stays the caller's.
    void *zc = rocl_bfget(100);
    CHECK(zc != nullptr, "rocl_bfget");
    CHECK_RC(rocl_bftoret(zc), ROCL_OK);
    const int rc2 = rocl_send(s, a, 2, zc, 100);
    EXPECT(rc2 == ROCL_EBADGID, "zero-copy buffer to deleted %s returned %s, expected ROCL_EBADGID",
           hex(a).c_str(), rc_text(rc2).c_str());
    if (rc2 != ROCL_OK) CHECK_RC(rocl_bfret(zc), ROCL_OK);
    send_text(s, b, 3, "to B");
    // And again, now that the transport may have heard of the deletion.
    usleep(100000);
    const int rc3 = rocl_send(s, a, 2, text, sizeof text - 1);
    EXPECT(rc3 == ROCL_EBADGID, "a later send to deleted %s returned %s, expected ROCL_EBADGID",
           hex(a).c_str(), rc_text(rc3).c_str());
    ctl_send(3, "sent", 4);
    note("sends to the deleted resource returned %s, %s, %s", rc_text(rc1).c_str(),
         rc_text(rc2).c_str(), rc_text(rc3).c_str());
  }
  barrier("done");
}

}  // namespace conf
