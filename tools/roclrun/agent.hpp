// agent.hpp - roclrun's agent on each host of a job that spans several
// (agent.cpp): `roclrun --agent directory|rank ...`.
#pragma once

namespace rocl::impl {

// Runs the agent for argv ("roclrun --agent ROLE ..."); returns the exit
// status.
int run_agent(int argc, char **argv);

}  // namespace rocl::impl
