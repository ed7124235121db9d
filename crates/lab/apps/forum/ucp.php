<?php
// webtune lab forum: logging in (phpBB's ucp.php?mode=login). GET shows the form with its
// signed form token; POST checks the token, the name and the password, opens a session
// (a row of `sessions` with its own token for the forms a logged-in user posts) and sets
// the session cookie. A wrong token, name or password is a 403 without a session.
declare(strict_types=1);
require __DIR__ . '/common.php';

/** The login form. */
function login_form(): string
{
    return '<form method="post" action="/ucp.php?mode=login" id="login"><h2>Login</h2>'
        . '<input type="hidden" name="form_token" value="' . h(login_form_token()) . '">'
        . '<dl><dt><label for="username">Username:</label></dt><dd><input type="text" name="username" id="username"></dd></dl>'
        . '<dl><dt><label for="password">Password:</label></dt><dd><input type="password" name="password" id="password"></dd></dl>'
        . '<input type="submit" name="login" value="Login" class="button1"></form>';
}

forum_run(function (): string {
    if (($_GET['mode'] ?? '') !== 'login') {
        throw new NotFound('unknown mode');
    }
    if (($_SERVER['REQUEST_METHOD'] ?? 'GET') !== 'POST') {
        return layout('Login', [['Login', '/ucp.php?mode=login']], login_form());
    }
    if (!login_form_token_ok(post_param('form_token'))) {
        throw new Forbidden('The form token is missing or has expired: load the login page again.');
    }
    $name = post_param('username');
    $db = forum_db();
    $rows = forum_rows(
        $db,
        'SELECT u.id, u.name, c.hash FROM users u JOIN credentials c ON c.user_id = u.id WHERE u.name = ?',
        's',
        [$name]
    );
    if (!$rows || !hash_equals($rows[0]['hash'], hash('sha256', $rows[0]['name'] . ':' . post_param('password')))) {
        throw new Forbidden('The user name or the password is wrong.');
    }
    $session = [
        'id' => random_hex(16),
        'user_id' => (int)$rows[0]['id'],
        'name' => $rows[0]['name'],
        'form_token' => random_hex(16),
    ];
    $now = time();
    forum_exec(
        $db,
        'INSERT INTO sessions (id, user_id, form_token, created, seen) VALUES (?, ?, ?, ?, ?)',
        'sisii',
        [$session['id'], $session['user_id'], $session['form_token'], $now, $now]
    );
    $db->close();
    setcookie(SESSION_COOKIE, $session['id'], ['path' => '/', 'httponly' => true, 'samesite' => 'Lax']);
    return layout(
        'Login',
        [['Login', '/ucp.php?mode=login']],
        '<div class="panel"><p>You have been successfully logged in.</p>'
            . '<p><a href="/index.php">Return to the board index</a></p></div>',
        $session
    );
});
