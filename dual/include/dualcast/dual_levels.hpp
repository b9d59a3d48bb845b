// How Duals of different tags combine: a total order on tags and the canonical nesting of levels.
#pragma once

#include "dualcast/host_device.hpp"

namespace dualcast {

template <class T, int N, class Tag>
class Dual;

namespace detail {

// A total order on tag types, decided at compile time from the compiler's spelling of the type
// (the only portable handle on a type's identity). Longer spellings sort later, then
// lexicographically. A helper's tag names the callable, and a callable defined inside another
// differentiated callable has the longer spelling, so as in ForwardDiff the inner
// differentiation ends up as the outer nesting level. Any total order gives correct
// derivatives (the algebra of several perturbations is commutative); the order only fixes one
// representation so that types agree.
template <class T>
DUALCAST_HD constexpr const char* tag_spelling() {
#if defined(_MSC_VER) && !defined(__clang__)
  return __FUNCSIG__;
#else
  return __PRETTY_FUNCTION__;
#endif
}

DUALCAST_HD constexpr int spelling_length(const char* s) {
  int n = 0;
  while (s[n] != '\0') ++n;
  return n;
}

template <class A, class B>
DUALCAST_HD constexpr int compare_tags() {
  const char* a = tag_spelling<A>();
  const char* b = tag_spelling<B>();
  const int la = spelling_length(a), lb = spelling_length(b);
  if (la != lb) return la < lb ? -1 : 1;
  for (int i = 0; i < la; ++i)
    if (a[i] != b[i]) return a[i] < b[i] ? -1 : 1;
  return 0;
}

// True when a level of tag A goes outside (wraps) a level of tag B.
template <class A, class B>
inline constexpr bool tag_outside_v = compare_tags<A, B>() > 0;

// One nesting level: a tag and its number of lanes. A Dual type is a list of levels (outermost
// first) over a real scalar type.
template <class Tag, int N>
struct level {
  using tag = Tag;
  static constexpr int lanes = N;
};
template <class... L>
struct level_list {};

template <class L, class List>
struct prepend;
template <class L, class... Ls>
struct prepend<L, level_list<Ls...>> {
  using type = level_list<L, Ls...>;
};

template <class X>
struct levels_of {
  using type = level_list<>;
};
template <class T, int N, class Tag>
struct levels_of<Dual<T, N, Tag>> : prepend<level<Tag, N>, typename levels_of<T>::type> {};

// lanes_of_tag<List, Tag>: the lane count of Tag's level in List, 0 when absent.
template <class List, class Tag>
struct lanes_of_tag;
template <class Tag>
struct lanes_of_tag<level_list<>, Tag> : stdx::integral_constant<int, 0> {};
template <class L, class... Ls, class Tag>
struct lanes_of_tag<level_list<L, Ls...>, Tag>
    : stdx::integral_constant<int, stdx::is_same_v<typename L::tag, Tag> ? L::lanes
                                                                        : lanes_of_tag<level_list<Ls...>, Tag>::value> {};

template <class X, class Tag>
inline constexpr bool has_tag_v = lanes_of_tag<typename levels_of<X>::type, Tag>::value > 0;

// Every level of List appears in Super with the same lane count.
template <class List, class Super>
struct levels_subset;
template <class Super>
struct levels_subset<level_list<>, Super> : stdx::true_type {};
template <class L, class... Ls, class Super>
struct levels_subset<level_list<L, Ls...>, Super>
    : stdx::bool_constant<lanes_of_tag<Super, typename L::tag>::value == L::lanes &&
                          levels_subset<level_list<Ls...>, Super>::value> {};

// Insert a level into a list sorted outermost-first. Two different tag types with the same
// spelling cannot be ordered: that is a compile error that says what to do.
template <class L, class List>
struct insert_level;
template <class L>
struct insert_level<L, level_list<>> {
  using type = level_list<L>;
};
template <class L, class H, class... Ls>
struct insert_level<L, level_list<H, Ls...>> {
  static_assert(stdx::is_same_v<typename L::tag, typename H::tag> ||
                    compare_tags<typename L::tag, typename H::tag>() != 0,
                "dualcast: two different Dual tags have the same spelling and cannot be ordered; "
                "pass an explicit tag, e.g. dualcast::derivative<MyTag>(f, x)");
  using type = stdx::conditional_t<tag_outside_v<typename L::tag, typename H::tag>, level_list<L, H, Ls...>,
                                   typename prepend<H, typename insert_level<L, level_list<Ls...>>::type>::type>;
};

// The union of two level lists (a tag present in both keeps one level), sorted.
template <class Acc, class List>
struct merge_levels;
template <class Acc>
struct merge_levels<Acc, level_list<>> {
  using type = Acc;
};
template <class Acc, class L, class... Ls>
struct merge_levels<Acc, level_list<L, Ls...>>
    : merge_levels<stdx::conditional_t<(lanes_of_tag<Acc, typename L::tag>::value > 0), Acc,
                                       typename insert_level<L, Acc>::type>,
                   level_list<Ls...>> {};

// A Dual type from a level list over scalar S.
template <class List, class S>
struct build_dual;
template <class S>
struct build_dual<level_list<>, S> {
  using type = S;
};
template <class L, class... Ls, class S>
struct build_dual<level_list<L, Ls...>, S> {
  using type = Dual<typename build_dual<level_list<Ls...>, S>::type, L::lanes, typename L::tag>;
};

// X without the level of Tag (X itself when it has none).
template <class List, class Tag>
struct drop_level;
template <class Tag>
struct drop_level<level_list<>, Tag> {
  using type = level_list<>;
};
template <class L, class... Ls, class Tag>
struct drop_level<level_list<L, Ls...>, Tag> {
  using rest = typename drop_level<level_list<Ls...>, Tag>::type;
  using type = stdx::conditional_t<stdx::is_same_v<typename L::tag, Tag>, rest, typename prepend<L, rest>::type>;
};

}  // namespace detail
}  // namespace dualcast
