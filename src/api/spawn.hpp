// spawn.hpp - the api layer's side of rocl_export / rocl_spawn_thread
// (spawn_api.cpp) that rocl_exit needs.
#pragma once

namespace rocl::impl {

// Ends this process's launcher, if it has one: its resources leave the
// directory (no new spawns), then it waits for the serving thread and for
// every thread spawned here to return. Called by the last rocl_exit,
// before the context goes.
void stop_launcher();

}  // namespace rocl::impl
