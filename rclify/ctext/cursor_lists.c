/* Lists of libclang cursors made in C, for rclify's Python (rclify/ctext/cursor_lists.py).
 *
 * libclang's Python bindings list a cursor's children through one Python callback per child,
 * which makes two more calls through ctypes (a null cursor, then a comparison with it); a
 * translation unit's top level holds about 12,000 cursors (memcached.c: 5,215 macro uses and
 * 4,321 macro definitions, most of them in system headers), and the analysis read every one of
 * them, in every unit, then asked each for its file: 3 of the 5 seconds libclang took.  Here one
 * call lists a cursor's children, a node's whole subtree, the top-level cursors of some kinds
 * with where they are, or their spellings.
 *
 * No libclang header is needed: the few types are libclang's stable C ABI (clang-c/Index.h),
 * and the functions are the ones the bindings loaded, handed over as pointers
 * (struct libclang), so both sides use the same library.
 */

typedef struct {
	int kind;
	int xdata;
	const void *data[3];
} CXCursor;

typedef struct {
	const void *ptr_data[2];
	unsigned int_data;
} CXSourceLocation;

typedef struct {
	const void *ptr_data[2];
	unsigned begin_int_data;
	unsigned end_int_data;
} CXSourceRange;

enum { CHILD_VISIT_CONTINUE = 1 };

typedef struct {
	const void *data;
	unsigned private_flags;
} CXString;

typedef int (*cursor_visitor)(CXCursor cursor, CXCursor parent, void *client_data);

struct libclang {
	unsigned (*visit_children)(CXCursor parent, cursor_visitor visitor, void *client_data);
	CXSourceLocation (*cursor_location)(CXCursor);
	CXSourceRange (*cursor_extent)(CXCursor);
	CXSourceLocation (*range_start)(CXSourceRange);
	CXSourceLocation (*range_end)(CXSourceRange);
	void (*instantiation_location)(CXSourceLocation, void **file, unsigned *line, unsigned *column,
				       unsigned *offset);
	int (*is_from_main_file)(CXSourceLocation);
	unsigned (*is_definition)(CXCursor);
	unsigned (*hash_cursor)(CXCursor);
	CXString (*cursor_spelling)(CXCursor);
	const char *(*c_string)(CXString);
	void (*dispose_string)(CXString);
};

/* A listed top-level cursor and what the analysis asks of it: the file and offsets are those
 * of the instantiation location, as the bindings' SourceLocation.file and .offset give them. */
struct top_level_entry {
	CXCursor cursor;
	void *file; /* its location's CXFile; NULL: none (a builtin) */
	unsigned start, end; /* its extent's offsets */
	int from_main_file;
	int is_definition;
};

/* The listings of children, of top-level cursors and of spellings write at most `capacity`
 * items and count them all: a caller that gets a count over its capacity calls again with room
 * for that many.  The subtree's says -1 instead (it cannot list past what it has no room for). */

/* A listed child with its extent's offsets (most walks ask each node where it starts). */
struct child_entry {
	CXCursor cursor;
	unsigned start, end;
};

struct children {
	const struct libclang *lib;
	struct child_entry *out;
	long capacity, count;
};

static void offsets(const struct libclang *lib, CXCursor cursor, unsigned *start, unsigned *end)
{
	CXSourceRange extent = lib->cursor_extent(cursor);
	lib->instantiation_location(lib->range_start(extent), 0, 0, 0, start);
	lib->instantiation_location(lib->range_end(extent), 0, 0, 0, end);
}

static int add_child(CXCursor cursor, CXCursor parent, void *client_data)
{
	struct children *list = client_data;
	(void)parent;
	if (list->count < list->capacity) {
		struct child_entry *entry = &list->out[list->count];
		entry->cursor = cursor;
		offsets(list->lib, cursor, &entry->start, &entry->end);
	}
	list->count++;
	return CHILD_VISIT_CONTINUE;
}

long rclify_children(const struct libclang *lib, CXCursor parent, struct child_entry *out, long capacity)
{
	struct children list = { lib, out, capacity, 0 };
	lib->visit_children(parent, add_child, &list);
	return list.count;
}

/* A node of a listed subtree: its cursor, its extent's offsets, its hash (clang_hashCursor), and
 * where its children are in the listing (they are contiguous, in order). */
struct subtree_node {
	CXCursor cursor;
	unsigned start, end, hash;
	int first_child, child_count, unused;
};

struct subtree {
	const struct libclang *lib;
	struct subtree_node *out;
	long capacity, count;
};

static int add_node(CXCursor cursor, CXCursor parent, void *client_data)
{
	struct subtree *list = client_data;
	(void)parent;
	if (list->count == list->capacity) {
		list->count = -1;
		return 0; /* CXChildVisit_Break */
	}
	struct subtree_node *node = &list->out[list->count++];
	node->cursor = cursor;
	offsets(list->lib, cursor, &node->start, &node->end);
	node->hash = list->lib->hash_cursor(cursor);
	node->first_child = node->child_count = 0;
	return CHILD_VISIT_CONTINUE;
}

/* The whole subtree under root, root first, each node's children listed after the nodes before
 * it (breadth first: no recursion however deep the tree); returns how many nodes, or -1 when
 * they do not fit in capacity (the caller lists again with more room).  One call per function
 * instead of one per node: a function has hundreds of nodes, most of them leaves. */
long rclify_subtree(const struct libclang *lib, CXCursor root, struct subtree_node *out, long capacity)
{
	struct subtree list = { lib, out, capacity, 0 };
	if (capacity < 1)
		return -1;
	add_node(root, root, &list);
	for (long i = 0; i < list.count; i++) {
		long first = list.count;
		lib->visit_children(out[i].cursor, add_node, &list);
		if (list.count < 0)
			return -1;
		out[i].first_child = (int)first;
		out[i].child_count = (int)(list.count - first);
	}
	return list.count;
}

struct top_level {
	const struct libclang *lib;
	const int *kinds;
	int n_kinds;
	int definitions_of; /* of this kind, only the cursors that are definitions (-1: none such) */
	struct top_level_entry *out;
	long capacity, count;
};

static int add_top_level(CXCursor cursor, CXCursor parent, void *client_data)
{
	struct top_level *list = client_data;
	const struct libclang *lib = list->lib;
	int wanted = 0;
	(void)parent;
	for (int i = 0; i < list->n_kinds && !wanted; i++)
		wanted = cursor.kind == list->kinds[i];
	if (!wanted)
		return CHILD_VISIT_CONTINUE;
	/* a unit declares a thousand functions of its headers, and defines a few */
	int is_definition = cursor.kind == list->definitions_of ? (int)lib->is_definition(cursor) : -1;
	if (is_definition == 0)
		return CHILD_VISIT_CONTINUE;
	if (list->count < list->capacity) {
		struct top_level_entry *entry = &list->out[list->count];
		CXSourceLocation location = lib->cursor_location(cursor);
		entry->cursor = cursor;
		entry->file = 0;
		lib->instantiation_location(location, &entry->file, 0, 0, 0);
		offsets(lib, cursor, &entry->start, &entry->end);
		entry->from_main_file = lib->is_from_main_file(location);
		entry->is_definition = is_definition < 0 ? (int)lib->is_definition(cursor) : is_definition;
	}
	list->count++;
	return CHILD_VISIT_CONTINUE;
}

long rclify_top_level(const struct libclang *lib, CXCursor unit, const int *kinds, int n_kinds,
		      int definitions_of, struct top_level_entry *out, long capacity)
{
	struct top_level list = { lib, kinds, n_kinds, definitions_of, out, capacity, 0 };
	lib->visit_children(unit, add_top_level, &list);
	return list.count;
}

struct spellings {
	const struct libclang *lib;
	int kind;
	char *out;
	long capacity, length;
};

static int add_spelling(CXCursor cursor, CXCursor parent, void *client_data)
{
	struct spellings *list = client_data;
	(void)parent;
	if (cursor.kind != list->kind)
		return CHILD_VISIT_CONTINUE;
	CXString spelling = list->lib->cursor_spelling(cursor);
	const char *text = list->lib->c_string(spelling);
	for (const char *c = text ? text : ""; ; c++) {
		if (list->length < list->capacity)
			list->out[list->length] = *c;
		list->length++;
		if (!*c)
			break;
	}
	list->lib->dispose_string(spelling);
	return CHILD_VISIT_CONTINUE;
}

/* The spellings of the unit's top-level cursors of one kind (a macro definition's: its name),
 * in order, each ended by a NUL; returns their length, written or not. */
long rclify_top_level_spellings(const struct libclang *lib, CXCursor unit, int kind, char *out, long capacity)
{
	struct spellings list = { lib, kind, out, capacity, 0 };
	lib->visit_children(unit, add_spelling, &list);
	return list.length;
}
