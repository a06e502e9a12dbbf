/// <reference types="vitepress/client" />
// VitePress's default theme, with the reference pages given the page's width (their tables are wide).
import DefaultTheme from 'vitepress/theme';
import './wide.css';

export default DefaultTheme;
