<?php
// webtune lab forum: replying to a thread (phpBB's posting.php?mode=reply), logged-in users
// only. GET shows the reply form; POST checks the session's form token, then in one
// transaction inserts the post and bumps the counters phpBB keeps denormalised: the
// topic's replies and last post, the forum's posts and last post, the author's posts.
// Not logged in or a wrong token: 403; an unknown topic: 404; an empty message: 400.
declare(strict_types=1);
require __DIR__ . '/common.php';

/** The longest message accepted, in bytes (phpBB's default max_post_chars is 60,000). */
const MAX_MESSAGE_BYTES = 60000;

function reply_form(int $topic_id, string $form_token): string
{
    return '<form method="post" action="/posting.php?mode=reply&amp;t=' . $topic_id . '" id="postform">'
        . '<h2>Post a reply</h2><input type="hidden" name="t" value="' . $topic_id . '">'
        . '<input type="hidden" name="form_token" value="' . h($form_token) . '">'
        . '<textarea name="message" rows="15" cols="76"></textarea>'
        . '<input type="submit" name="post" value="Submit" class="button1"></form>';
}

forum_run(function (): string {
    if (($_GET['mode'] ?? '') !== 'reply') {
        throw new NotFound('unknown mode');
    }
    $topic_id = id_param('t');
    $db = forum_db();
    $session = forum_session($db);
    if ($session === null) {
        throw new Forbidden('You must be logged in to reply.');
    }
    $topics = forum_rows($db, 'SELECT id, title, forum_id FROM topics WHERE id = ?', 'i', [$topic_id]);
    if (!$topics) {
        throw new NotFound('no such topic');
    }
    $topic = $topics[0];
    $forum_id = (int)$topic['forum_id'];
    $topic_url = '/viewtopic.php?t=' . $topic_id;
    $crumbs = [[$topic['title'], $topic_url], ['Post a reply', '/posting.php?mode=reply&t=' . $topic_id]];
    if (($_SERVER['REQUEST_METHOD'] ?? 'GET') !== 'POST') {
        $db->close();
        return layout('Post a reply', $crumbs, reply_form($topic_id, $session['form_token']), $session);
    }
    if (!hash_equals($session['form_token'], post_param('form_token'))) {
        throw new Forbidden('The form token is wrong: load the thread again and post again.');
    }
    $message = trim(post_param('message'));
    if ($message === '' || strlen($message) > MAX_MESSAGE_BYTES) {
        throw new BadRequest('The message is empty or longer than 60,000 bytes.');
    }
    $now = time();
    $user_id = $session['user_id'];
    $db->begin_transaction();
    forum_exec(
        $db,
        'INSERT INTO posts (topic_id, forum_id, user_id, posted, subject, body) VALUES (?, ?, ?, ?, ?, ?)',
        'iiiiss',
        [$topic_id, $forum_id, $user_id, $now, 'Re: ' . $topic['title'], $message]
    );
    $post_id = (int)$db->insert_id;
    forum_exec(
        $db,
        'UPDATE topics SET replies = replies + 1, last_post_id = ?, last_post_time = ?, last_poster_id = ? WHERE id = ?',
        'iiii',
        [$post_id, $now, $user_id, $topic_id]
    );
    forum_exec(
        $db,
        'UPDATE forums SET posts = posts + 1, last_post_id = ?, last_post_time = ?, last_poster_id = ?,
                last_topic_id = ? WHERE id = ?',
        'iiiii',
        [$post_id, $now, $user_id, $topic_id, $forum_id]
    );
    forum_exec($db, 'UPDATE users SET posts = posts + 1 WHERE id = ?', 'i', [$user_id]);
    $db->commit();
    $db->close();
    return layout(
        'Post a reply',
        $crumbs,
        '<div class="panel"><p>Your message has been posted successfully.</p><p><a href="'
            . h($topic_url) . '&amp;p=' . $post_id . '#p' . $post_id . '">View your submitted message</a></p></div>',
        $session
    );
});
