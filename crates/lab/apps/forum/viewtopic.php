<?php
// webtune lab forum: one thread, its posts oldest first with each author's profile,
// paginated, and for a logged-in user phpBB's quick-reply form. A page past the end shows
// the last page; an unknown or malformed topic id is a 404.
declare(strict_types=1);
require __DIR__ . '/common.php';

/** A post's text as HTML: blank lines separate paragraphs, "> " starts a quote. */
function post_html(string $body): string
{
    $html = '';
    foreach (preg_split('/\n\s*\n/', $body) as $paragraph) {
        if (strncmp($paragraph, '> ', 2) === 0) {
            $html .= '<blockquote><div>' . nl2br(h(substr($paragraph, 2))) . '</div></blockquote>';
        } else {
            $html .= '<p>' . nl2br(h($paragraph)) . '</p>';
        }
    }
    return $html;
}

/** phpBB's quick-reply form at the foot of a thread (logged-in users only). */
function quick_reply(int $topic_id, string $form_token): string
{
    return '<form method="post" action="/posting.php?mode=reply&amp;t=' . $topic_id . '" id="qr_postform">'
        . '<h3>Quick Reply</h3><input type="hidden" name="t" value="' . $topic_id . '">'
        . '<input type="hidden" name="form_token" value="' . h($form_token) . '">'
        . '<textarea name="message" rows="7" cols="76"></textarea>'
        . '<input type="submit" name="post" value="Submit" class="button1"></form>';
}

forum_run(function (): string {
    $topic_id = id_param('t');
    $page = id_param('page', 1);
    $per_page = (int)forum_config()['posts_per_page'];
    $db = forum_db();
    $topics = forum_rows(
        $db,
        'SELECT t.id, t.title, t.replies, t.views, t.forum_id, f.name AS forum, c.name AS category
           FROM topics t
           JOIN forums f ON f.id = t.forum_id
           JOIN categories c ON c.id = f.category_id
          WHERE t.id = ?',
        'i',
        [$topic_id]
    );
    if (!$topics) {
        throw new NotFound('no such topic');
    }
    $topic = $topics[0];
    $pages = page_count((int)$topic['replies'] + 1, $per_page);
    $page = min($page, $pages);
    $posts = forum_rows(
        $db,
        'SELECT p.id, p.posted, p.subject, p.body, u.id AS user_id, u.name, u.joined,
                u.posts AS user_posts, u.location, u.signature
           FROM posts p
           JOIN users u ON u.id = p.user_id
          WHERE p.topic_id = ?
          ORDER BY p.id
          LIMIT ? OFFSET ?',
        'iii',
        [$topic_id, $per_page, ($page - 1) * $per_page]
    );
    $session = forum_session($db);
    $db->close();

    $base = '/viewtopic.php?t=' . $topic_id;
    $forum_url = '/viewforum.php?f=' . (int)$topic['forum_id'];
    $html = '<h2 class="topic-title"><a href="' . h($base) . '">' . h($topic['title']) . '</a></h2>'
        . '<div class="action-bar"><a href="/posting.php?mode=reply&amp;t=' . $topic_id
        . '" class="button">Post Reply</a> ' . number_format((int)$topic['replies'] + 1) . ' posts &bull; '
        . number_format((int)$topic['views']) . ' views ' . pagination($base, $page, $pages) . '</div>';
    $row = 0;
    foreach ($posts as $p) {
        $class = ($row++ % 2) ? 'bg2' : 'bg1';
        $location = $p['location'] !== '' ? '<dd><strong>Location:</strong> ' . h($p['location']) . '</dd>' : '';
        $signature = $p['signature'] !== '' ? '<div class="signature">' . h($p['signature']) . '</div>' : '';
        $html .= '<div id="p' . (int)$p['id'] . '" class="post ' . $class . '"><div class="postbody">'
            . '<h3><a href="#p' . (int)$p['id'] . '">' . h($p['subject']) . '</a></h3>'
            . '<p class="author">by <strong>' . user_link((int)$p['user_id'], $p['name']) . '</strong> &raquo; '
            . format_time((int)$p['posted']) . '</p><div class="content">' . post_html($p['body'])
            . '</div>' . $signature . '</div><dl class="postprofile"><dt>'
            . user_link((int)$p['user_id'], $p['name']) . '</dt><dd><strong>Posts:</strong> '
            . number_format((int)$p['user_posts']) . '</dd><dd><strong>Joined:</strong> '
            . gmdate('D M j, Y', (int)$p['joined']) . '</dd>' . $location . '</dl></div>';
    }
    $html .= pagination($base, $page, $pages)
        . '<p class="jumpbox-return"><a href="' . h($forum_url) . '">Return to &ldquo;' . h($topic['forum'])
        . '&rdquo;</a></p>';
    if ($session !== null) {
        $html .= quick_reply($topic_id, $session['form_token']);
    }
    return layout(
        $topic['title'],
        [[$topic['category'], '/index.php'], [$topic['forum'], $forum_url], [$topic['title'], $base]],
        $html,
        $session
    );
});
