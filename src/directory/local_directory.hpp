// local_directory.hpp - the in-process directory server: one hashed
// in-memory DB (RoCL paper, section 3.2) behind the Directory interface.
//
// Data:
//  - resources by gid (ordered: queries answer in increasing gid order);
//  - a hash index from (name, value) to the ordered set of gids having that
//    attribute. A query with specified attributes takes the smallest of their
//    gid sets and checks the other attributes by set membership; a query
//    without one walks all resources.
//  - gids: this server's whole range (server id, serials 1..2^48-1) is its
//    own from construction. The serial counter of a server id is
//    process-wide: LocalDirectory objects with the same id (one per context,
//    a new one after rocl_exit + rocl_init) share it, so a gid is never
//    issued twice in a process, and serials are never reused.
// One std::shared_mutex guards it all: queries share it, registration and
// removal take it exclusively (the directory is not the message fast path).
// A removal epoch (directory.hpp) of its own: remove and remove_context add 1
// when they removed something.
// Cursors share ownership of the DB, so they stay usable (and see an empty
// directory) if the LocalDirectory is destroyed first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "directory/directory.hpp"

namespace rocl::impl {

class LocalDirectory final : public Directory {
 public:
  // server_id must be 1..max_server_id(width) (make_local_directory checks
  // it).
  explicit LocalDirectory(std::uint16_t server_id, GidWidth width = GidWidth::kWide);
  ~LocalDirectory() override;
  LocalDirectory(const LocalDirectory &) = delete;
  LocalDirectory &operator=(const LocalDirectory &) = delete;

  std::int64_t register_resource(const AttrList &attrs, rocl_gid_t context) override;
  int remove(rocl_gid_t gid) override;
  int query(rocl_gid_t *gid, AttrList &attrs) override;
  std::unique_ptr<QueryCursor> query_start(const AttrList &pattern) override;
  int remove_context(rocl_gid_t context) override;

  // For the node server's batched answers (dir_protocol.hpp): calls
  // take(gid, list) for each resource matching `pattern` (its attributes
  // added with a value, as query_start takes them) whose gid is larger than
  // `after`, in increasing gid order, `list` being the resource's whole
  // attribute list ("context" included), until take returns false. Returns
  // true if take declined one (so some matching resource follows those
  // taken), false if take saw every match. One shared lock for the whole
  // scan: what take sees is one state of the directory; take must not call
  // into this directory.
  bool scan(const AttrList &pattern, rocl_gid_t after,
            const std::function<bool(rocl_gid_t, const AttrList &)> &take) const;

  std::uint16_t server_id() const;
  // Number of registered resources.
  std::size_t size() const;

  struct State;  // the DB (local_directory.cpp)

 private:
  std::shared_ptr<State> state_;
};

}  // namespace rocl::impl
