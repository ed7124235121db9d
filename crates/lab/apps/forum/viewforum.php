<?php
// webtune lab forum: one forum's topic list, newest activity first, paginated. A page past
// the end shows the last page (phpBB clamps the start offset the same way); an unknown or
// malformed forum id is a 404.
declare(strict_types=1);
require __DIR__ . '/common.php';

forum_run(function (): string {
    $forum_id = id_param('f');
    $page = id_param('page', 1);
    $per_page = (int)forum_config()['topics_per_page'];
    $db = forum_db();
    $forums = forum_rows(
        $db,
        'SELECT f.id, f.name, f.description, f.topics, f.posts, c.name AS category
           FROM forums f JOIN categories c ON c.id = f.category_id
          WHERE f.id = ?',
        'i',
        [$forum_id]
    );
    if (!$forums) {
        throw new NotFound('no such forum');
    }
    $forum = $forums[0];
    $pages = page_count((int)$forum['topics'], $per_page);
    $page = min($page, $pages);
    $topics = forum_rows(
        $db,
        'SELECT t.id, t.title, t.replies, t.views, t.created, t.last_post_id, t.last_post_time,
                a.id AS author_id, a.name AS author, l.id AS last_poster_id, l.name AS last_poster
           FROM topics t
           JOIN users a ON a.id = t.author_id
           JOIN users l ON l.id = t.last_poster_id
          WHERE t.forum_id = ?
          ORDER BY t.last_post_time DESC
          LIMIT ? OFFSET ?',
        'iii',
        [$forum_id, $per_page, ($page - 1) * $per_page]
    );
    $session = forum_session($db);
    $db->close();

    $posts_per_page = (int)forum_config()['posts_per_page'];
    $base = '/viewforum.php?f=' . $forum_id;
    $html = '<h2 class="forum-title"><a href="' . h($base) . '">' . h($forum['name']) . '</a></h2>'
        . '<div class="forum-desc">' . h($forum['description']) . '</div>'
        . '<div class="action-bar"><a href="/posting.php?mode=post&amp;f=' . $forum_id
        . '" class="button">New Topic</a> ' . number_format((int)$forum['topics']) . ' topics &bull; '
        . pagination($base, $page, $pages) . '</div>'
        . '<div class="forumbg"><table class="list"><thead><tr><th>Topics</th><th>Replies</th><th>Views</th>'
        . '<th>Last post</th></tr></thead><tbody>';
    $row = 0;
    foreach ($topics as $t) {
        $class = ($row++ % 2) ? 'bg2' : 'bg1';
        $topic_url = '/viewtopic.php?t=' . (int)$t['id'];
        $topic_pages = page_count((int)$t['replies'] + 1, $posts_per_page);
        $jump = '';
        if ($topic_pages > 1) {
            $jump = ' <span class="pagination-small">[ Go to page: ';
            foreach (array_unique([1, 2, $topic_pages - 1, $topic_pages]) as $p) {
                if ($p >= 1) {
                    $jump .= '<a href="' . h($topic_url . '&page=' . $p) . '">' . $p . '</a> ';
                }
            }
            $jump .= ']</span>';
        }
        $html .= '<tr class="' . $class . '"><td><a href="' . h($topic_url) . '" class="topictitle">'
            . h($t['title']) . '</a>' . $jump . '<br>by ' . user_link((int)$t['author_id'], $t['author'])
            . ' &raquo; ' . format_time((int)$t['created']) . '</td><td class="posts">'
            . number_format((int)$t['replies']) . '</td><td class="views">' . number_format((int)$t['views'])
            . '</td><td class="lastpost">by ' . user_link((int)$t['last_poster_id'], $t['last_poster'])
            . ' <a href="' . h($topic_url . '&page=' . $topic_pages) . '#p' . (int)$t['last_post_id']
            . '" title="Go to last post">&rarr;</a><br>' . format_time((int)$t['last_post_time']) . '</td></tr>';
    }
    $html .= '</tbody></table></div>' . pagination($base, $page, $pages);
    return layout($forum['name'], [[$forum['category'], '/index.php'], [$forum['name'], $base]], $html, $session);
});
