/*
 * Macros Coccinelle cannot parse on its own, given to every spatch run (--macro-file).
 * The BSD <sys/queue.h> family declares struct fields and types through macros
 * (memcached: `STAILQ_ENTRY(cache_free_s) c_next;`); without these definitions spatch drops
 * every function of a file that uses them.  The expansions only need to parse (spatch does not
 * type-check): a pointer for an entry, a struct tag for a head.
 */
#define SLIST_HEAD(name, type) struct name
#define SLIST_ENTRY(type) struct type *
#define STAILQ_HEAD(name, type) struct name
#define STAILQ_ENTRY(type) struct type *
#define LIST_HEAD(name, type) struct name
#define LIST_ENTRY(type) struct type *
#define TAILQ_HEAD(name, type) struct name
#define TAILQ_ENTRY(type) struct type *
#define CIRCLEQ_HEAD(name, type) struct name
#define CIRCLEQ_ENTRY(type) struct type *
