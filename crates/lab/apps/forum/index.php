<?php
// webtune lab forum: the board index — categories, each forum with its topic and post
// counts and its latest post, and the board's statistics.
declare(strict_types=1);
require __DIR__ . '/common.php';

forum_run(function (): string {
    $db = forum_db();
    $categories = forum_rows($db, 'SELECT id, name FROM categories ORDER BY position');
    $forums = forum_rows(
        $db,
        'SELECT f.id, f.category_id, f.name, f.description, f.topics, f.posts, f.last_post_id,
                f.last_post_time, u.id AS poster_id, u.name AS poster, t.id AS topic_id, t.title
           FROM forums f
           JOIN users u ON u.id = f.last_poster_id
           JOIN topics t ON t.id = f.last_topic_id
          ORDER BY f.category_id, f.position'
    );
    $members = forum_rows($db, 'SELECT COUNT(*) AS users FROM users')[0];
    $newest = forum_rows($db, 'SELECT id, name FROM users ORDER BY id DESC LIMIT ?', 'i', [1])[0];
    $session = forum_session($db);
    $db->close();

    $by_category = [];
    $total_topics = 0;
    $total_posts = 0;
    foreach ($forums as $f) {
        $by_category[(int)$f['category_id']][] = $f;
        $total_topics += (int)$f['topics'];
        $total_posts += (int)$f['posts'];
    }
    $html = '';
    foreach ($categories as $c) {
        $html .= '<div class="forabg"><table class="list"><thead><tr><th>' . h($c['name'])
            . '</th><th>Topics</th><th>Posts</th><th>Last post</th></tr></thead><tbody>';
        $row = 0;
        foreach ($by_category[(int)$c['id']] ?? [] as $f) {
            $class = ($row++ % 2) ? 'bg2' : 'bg1';
            $html .= '<tr class="' . $class . '"><td><a href="/viewforum.php?f=' . (int)$f['id']
                . '" class="forumtitle">' . h($f['name']) . '</a><br><span class="forumdesc">'
                . h($f['description']) . '</span></td><td class="topics">' . number_format((int)$f['topics'])
                . '</td><td class="posts">' . number_format((int)$f['posts'])
                . '</td><td class="lastpost"><a href="/viewtopic.php?t=' . (int)$f['topic_id'] . '#p'
                . (int)$f['last_post_id'] . '" class="lastsubject">' . h($f['title']) . '</a><br>by '
                . user_link((int)$f['poster_id'], $f['poster']) . '<br>'
                . format_time((int)$f['last_post_time']) . '</td></tr>';
        }
        $html .= '</tbody></table></div>';
    }
    $html .= '<div class="stat-block"><h3>Statistics</h3><p>Total posts <strong>' . number_format($total_posts)
        . '</strong> &bull; Total topics <strong>' . number_format($total_topics)
        . '</strong> &bull; Total members <strong>' . number_format((int)$members['users'])
        . '</strong> &bull; Our newest member ' . user_link((int)$newest['id'], $newest['name'])
        . '</p></div>';
    return layout('Board index', [], $html, $session);
});
