"""Memory planning of graph-dialect functions: one device arena per graph.

- `lifetimes`: the schedule, every intermediate tensor's size and lifetime,
  and which tensors share storage (views, in-place ops, concat pieces);
- `strategies`: pure offset assignment, `(blocks) -> offsets`;
- `verify`: proof that no two tensors alive at one step overlap;
- `report`: numbers read back from the IR attributes (dict, text, JSON) and
  the accessors the lowering uses (`tensor_offset`, `arena_size`);
- `limit`: recompute/offload rewrites under a device-memory limit;
- `execute`: the reference interpreter running out of one arena buffer;
- `plot`: a PNG of the arena (matplotlib, optional).

The pass is `gedialects.graph.transforms.plan_memory`; conventions are in
docs/memory-planning.md.
"""
